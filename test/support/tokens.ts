/**
 * The operator token the tests present: the server's `adminToken` (or
 * `PEG_LIMITS_ADMIN_TOKEN`), sent as `Authorization: Bearer` or `x-api-key`. Long enough for
 * the strength rule of configured tokens; one value everywhere, so that a test that reads
 * logs or answers for it (redaction, say) looks for the same text.
 */
export const TOKEN = 'operator-token-0123456789';
