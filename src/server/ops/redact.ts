/**
 * Secrets never printed: what a log line or an error message may say of a connection string
 * or an alert URL. A password becomes `***` (`postgres://limits:***@db/limits`); an alert
 * URL loses its credentials and its query string, which often carries a token
 * (`https://***@hooks.example/p?***`). Node-only.
 */

const MASK = '***';

/**
 * `value` as a log line may show it: the password of a URL masked; with `query`, its user
 * and its query string too. A value that is not a URL is masked the same way by its shape
 * (`scheme://user:password@…`), so that a malformed one is not printed whole either.
 */
export function redactUrl(value: string, options: { readonly query?: boolean } = {}): string {
  const query = options.query === true;
  try {
    const u = new URL(value);
    if (u.password !== '') u.password = MASK;
    if (query && u.username !== '') u.username = MASK;
    if (query && u.search !== '') u.search = `?${MASK}`;
    if (query && u.hash !== '') u.hash = '';
    return u.toString();
  } catch {
    // Not a URL: mask what looks like credentials and a query, whatever else is wrong.
    let text = value.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*)@/i, (_, scheme, who) => {
      const at = who.indexOf(':');
      const user = at < 0 ? who : who.slice(0, at);
      return `${scheme}${query ? MASK : user}${at < 0 && !query ? '' : `:${MASK}`}@`;
    });
    if (query) text = text.replace(/[?#].*$/s, `?${MASK}`);
    // A password given as a parameter (`?password=…`) of a connection string.
    return text.replace(/([?&]password=)[^&#]*/gi, `$1${MASK}`);
  }
}

/** A connection string (`--store`) as a log line may show it. */
export function redactStore(value: string): string {
  const shown = redactUrl(value);
  return shown.replace(/([?&]password=)[^&#]*/gi, `$1${MASK}`);
}

/** An alert URL as a log line may show it: no credentials, no query string. */
export function redactAlertUrl(value: string): string {
  return redactUrl(value, { query: true });
}
