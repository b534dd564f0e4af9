/**
 * A reader of the Prometheus text exposition format (version 0.0.4), written apart from
 * prom-client (which writes it), so that the tests check the format rather than trust it:
 * `# HELP` and `# TYPE` lines, and samples `name{label="value",…} number`.
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  /** The declared type of each metric family. */
  readonly types: ReadonlyMap<string, string>;
  readonly help: ReadonlyMap<string, string>;
  readonly samples: ReadonlyArray<Sample>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const samples: Sample[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '') continue;
    const at = `line ${i + 1}: ${line}`;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
      if (m === null) continue; // a plain comment
      if (m[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3]!))
          throw new Error(`${at}: unknown type`);
        if (types.has(m[2]!)) throw new Error(`${at}: a second TYPE line`);
        types.set(m[2]!, m[3]!);
      } else help.set(m[2]!, m[3]!);
      continue;
    }
    const name = NAME.exec(line)?.[0];
    if (name === undefined) throw new Error(`${at}: no metric name`);
    let rest = line.slice(name.length);
    const labels: Record<string, string> = {};
    if (rest.startsWith('{')) {
      rest = rest.slice(1);
      while (!rest.startsWith('}')) {
        const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(rest);
        if (label === null) throw new Error(`${at}: a malformed label`);
        rest = rest.slice(label[0].length);
        let value = '';
        for (;;) {
          const c = rest[0];
          if (c === undefined) throw new Error(`${at}: an unterminated label value`);
          rest = rest.slice(1);
          if (c === '"') break;
          if (c === '\\') {
            const e = rest[0];
            rest = rest.slice(1);
            value += e === 'n' ? '\n' : e;
          } else value += c;
        }
        labels[label[1]!] = value;
        if (rest.startsWith(',')) rest = rest.slice(1);
      }
      rest = rest.slice(1);
    }
    const value = /^ (\S+)(?: -?\d+)?$/.exec(rest)?.[1];
    if (value === undefined) throw new Error(`${at}: no value`);
    // As Go's ParseFloat reads it: NaN and the infinities in any case.
    const v = value.toLowerCase();
    const number =
      v === '+inf' || v === 'inf'
        ? Number.POSITIVE_INFINITY
        : v === '-inf'
          ? Number.NEGATIVE_INFINITY
          : v === 'nan'
            ? Number.NaN
            : Number(value);
    if (Number.isNaN(number) && v !== 'nan') throw new Error(`${at}: not a number`);
    samples.push({ name, labels, value: number });
  }
  return { types, help, samples };
}

/** The one sample of `name` with these labels (all of them), or undefined. */
export function sampleOf(
  e: Exposition,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = e.samples.filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${name}: ${found.length} samples`);
  return found[0]?.value;
}
