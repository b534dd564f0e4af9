// Configuration the docs print, read back from the page, so that the tests and benchmarks
// that run it run the page's own text rather than a copy. Plain JavaScript: bench:replicas
// uses it too.

/**
 * The fenced block of `page` in `lang` whose first line is `# ${name}` (that line
 * included, the closing fence not).
 */
export function fencedBlock(page, lang, name) {
  const open = `\`\`\`${lang}\n`;
  const at = page.indexOf(`${open}# ${name}`);
  if (at < 0) throw new Error(`no \`\`\`${lang} block starting "# ${name}"`);
  const from = at + open.length;
  return page.slice(from, page.indexOf('```', from));
}

/** Every fenced block of `page` in `lang`, in order (the fences left out). */
export function fencedBlocks(page, lang) {
  return [...page.matchAll(new RegExp(`\`\`\`${lang}\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]);
}

/**
 * The HAProxy configuration of docs/replicas.md (`page`), on loopback: listening on
 * 127.0.0.1:`port`, in front of `replicas` (`host:port` each, r1 first) instead of the
 * page's 10.0.0.n:8080.
 */
export function haproxyConfig(page, port, replicas) {
  const text = fencedBlock(page, 'haproxy', 'peg-limits.cfg');
  if (!text.includes('bind :8080'))
    throw new Error('the HAProxy configuration no longer binds :8080');
  return text
    .replace('bind :8080', `bind 127.0.0.1:${port}`)
    .replace(/10\.0\.0\.(\d):8080/g, (_, i) => replicas[Number(i) - 1]);
}
