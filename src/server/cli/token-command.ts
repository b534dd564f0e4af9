/**
 * `peg-limits token [--json]`: a new operator token and the hash to configure for it; nothing
 * is stored. Node-only.
 */
import { generateOperatorToken, hashOperatorToken } from 'peg-limits';
import { fail } from './options.js';

/** Prints a new operator token and its tokenHash (as JSON with `--json`). */
export function tokenCommand(args: ReadonlyArray<string>): void {
  const json = args.includes('--json');
  const unknown = args.filter((a) => a !== '--json');
  if (unknown.length > 0) fail(`peg-limits token takes only --json, got ${unknown.join(' ')}`);
  const token = generateOperatorToken();
  const tokenHash = hashOperatorToken(token);
  process.stdout.write(
    json
      ? `${JSON.stringify({ token, tokenHash })}\n`
      : `token      ${token}\ntokenHash  ${tokenHash}\n\nGive the token to the operator (it is shown once); put the tokenHash in --config:\n  "operators": [{ "name": "…", "tokenHash": "${tokenHash}", "scopes": ["chain"] }]\n`,
  );
}
