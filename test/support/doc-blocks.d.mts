/** The types of doc-blocks.mjs (plain JavaScript, so that bench:replicas can use it too). */

/** The fenced block of `page` in `lang` whose first line is `# ${name}`, that line included. */
export function fencedBlock(page: string, lang: string, name: string): string;

/** Every fenced block of `page` in `lang`, in order (the fences left out). */
export function fencedBlocks(page: string, lang: string): string[];

/** docs/replicas.md's HAProxy configuration on 127.0.0.1:`port`, in front of `replicas` (host:port). */
export function haproxyConfig(page: string, port: number, replicas: ReadonlyArray<string>): string;
