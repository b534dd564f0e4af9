/** The types of nginx.mjs (plain JavaScript, so that bench:nginx can use it too). */

export const NGINX: string;
export const HAVE_NGINX: boolean;
export const NGINX_MISSING: string;

/** docs/operating.md's nginx configuration with this machine's port, upstream and cache folder. */
export function nginxConfig(
  page: string,
  listen: number,
  upstream: string,
  cacheDir: string,
): string;

/** nginx running the page's configuration in front of `upstream` (host:port), once it answers. */
export function startNginx(upstream: string): Promise<{ url: string; stop(): void }>;
