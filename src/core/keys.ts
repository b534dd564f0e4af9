/**
 * Throttle keys: secrets, their salted hashes, constant-time verification, and the key
 * registry events (the README, "Throttle mode"). Browser-safe: a pure-JS SHA-256 and the global Web Crypto
 * `getRandomValues`. The registry events that use them live with throttle mode (`throttle.ts`).
 */
import { sha256 } from '@noble/hashes/sha2';
import { LimitsError } from './errors.js';

/** The fewest characters a secret may have: 22 base64url characters carry 128 bits. */
const MIN_SECRET_LENGTH = 22;
/** The most characters a secret may have (a bound on the work one request can cause). */
export const MAX_SECRET_LENGTH = 1024;

const SCHEME = 'sha256';
const HASH_FORMAT = /^sha256:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]{43}$/;
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const encoder = new TextEncoder();

function base64url(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += B64[(n >>> 18) & 63]! + B64[(n >>> 12) & 63]! + B64[(n >>> 6) & 63]! + B64[n & 63]!;
  }
  if (i + 1 === bytes.length) {
    const n = bytes[i]! << 16;
    out += B64[(n >>> 18) & 63]! + B64[(n >>> 12) & 63]!;
  } else if (i + 2 === bytes.length) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += B64[(n >>> 18) & 63]! + B64[(n >>> 12) & 63]! + B64[(n >>> 6) & 63]!;
  }
  return out;
}

function randomBytes(n: number): Uint8Array {
  const bytes = new Uint8Array(n);
  globalThis.crypto.getRandomValues(bytes);
  return bytes;
}

// The digest of salt ‖ secret. One SHA-256 is enough: secrets are random with ≥ 128 bits,
// so there is nothing to stretch, and the endpoint stays cheap to call.
function digest(salt: string, secret: string): string {
  return base64url(sha256(encoder.encode(`${salt}:${secret}`)));
}

/** Compares two strings of equal length in time that does not depend on where they differ. */
function equalInConstantTime(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Generates a throttle key secret: 32 random bytes (256 bits) as 43 URL-safe characters.
 *
 * @example
 * ```ts
 * generateThrottleSecret(); // 'kq3J…' (43 characters of A–Z a–z 0–9 - _)
 * ```
 */
export function generateThrottleSecret(): string {
  return base64url(randomBytes(32));
}

/**
 * Hashes a throttle key secret with a fresh random salt, for the `throttleKeyAdded`
 * event: `sha256:<salt>:<digest>`. The hash never contains the secret.
 *
 * @throws LimitsError `weak_secret` when the secret has fewer than 22 characters (under
 *   128 bits even if random) or more than 1024
 * @example
 * ```ts
 * const secret = generateThrottleSecret();
 * apply(state, { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(secret) });
 * ```
 */
export function hashThrottleSecret(secret: string): string {
  if (
    typeof secret !== 'string' ||
    secret.length < MIN_SECRET_LENGTH ||
    secret.length > MAX_SECRET_LENGTH
  ) {
    throw new LimitsError(
      'weak_secret',
      `a throttle secret must have ${MIN_SECRET_LENGTH} to ${MAX_SECRET_LENGTH} characters; use generateThrottleSecret()`,
    );
  }
  const salt = base64url(randomBytes(16));
  return `${SCHEME}:${salt}:${digest(salt, secret)}`;
}

// Stands in for the hash of a key that does not exist, so that an unknown name costs the
// same work as a wrong secret.
const ABSENT_HASH = `${SCHEME}:AAAAAAAAAAAAAAAAAAAAAA:${'A'.repeat(43)}`;

/**
 * Whether `secret` matches `secretHash` (or, when there is no key, nothing, after the
 * same work). Constant time in the secret's content.
 */
export function verifyThrottleSecret(secretHash: string | undefined, secret: string): boolean {
  // Sliced by position rather than split: the same steps for a stored hash and the stand-in.
  const hash = secretHash ?? ABSENT_HASH;
  const salt = hash.slice(SCHEME.length + 1, SCHEME.length + 23);
  const expected = hash.slice(SCHEME.length + 24);
  const matches = equalInConstantTime(digest(salt, secret), expected);
  return matches && secretHash !== undefined;
}

/** True when `value` has the form of a hash made by {@link hashThrottleSecret}. */
export function isSecretHash(value: unknown): value is string {
  return typeof value === 'string' && HASH_FORMAT.test(value);
}

/** The fewest characters an operator token may have (the same 128 bits as a secret). */
export const MIN_TOKEN_LENGTH = MIN_SECRET_LENGTH;

const TOKEN_HASH_FORMAT = /^sha256:[0-9a-f]{64}$/;

function hex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

/**
 * Generates an operator token: 32 random bytes (256 bits) as 43 URL-safe characters. Give
 * it to the operator; configure only {@link hashOperatorToken} of it.
 *
 * @example
 * ```ts
 * const token = generateOperatorToken(); // 'Rk1v…' (43 characters)
 * hashOperatorToken(token);              // 'sha256:9f86d0…' (64 hex digits)
 * ```
 */
export function generateOperatorToken(): string {
  return base64url(randomBytes(32));
}

/**
 * The hash a service keeps of an operator token: `sha256:` and the lowercase hex SHA-256 of
 * the token. Tokens are random, so no salt is needed, and a service finds an operator by
 * the hash of the token it is given, with one SHA-256 whoever calls.
 *
 * @example
 * ```ts
 * hashOperatorToken('abc'); // 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
 * ```
 */
export function hashOperatorToken(token: string): string {
  return `sha256:${hex(sha256(encoder.encode(token)))}`;
}

/** True when `value` has the form {@link hashOperatorToken} gives. */
export function isTokenHash(value: unknown): value is string {
  return typeof value === 'string' && TOKEN_HASH_FORMAT.test(value);
}
