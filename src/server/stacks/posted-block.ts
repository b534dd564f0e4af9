/**
 * A posted `/new_block` body read: the payload a Stacks node sends, or a JSON string holding
 * it (as Emily's sidecar forwards it). Read as plain JSON, as the node wrote it: the
 * payload's mapping reads its numbers as numbers. The observer's port and the service's own
 * `POST /new_block` read it here. Node-only.
 */

/** The payload of a posted body, or why it is not JSON. */
export function blockPayloadOf(
  text: string,
):
  | { readonly ok: true; readonly payload: unknown }
  | { readonly ok: false; readonly reason: string } {
  try {
    const payload: unknown = JSON.parse(text);
    return { ok: true, payload: typeof payload === 'string' ? JSON.parse(payload) : payload };
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
}
