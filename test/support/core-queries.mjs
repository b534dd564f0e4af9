// The questions a bridge page asks the core, as one function of the library itself, so that
// Node and a browser run the very same code: replay a history given as JSON text, then
// answer the views and checks. Returns the answers as JSON text (int64 exact).
// Plain JavaScript, served to the browser as it is.

const ACCOUNTS = ['a0', 'a1', 'a2', 'a3', 'a4', 'nobody'];
const AMOUNTS = [1n, 100_000_000n, 9_007_199_254_740_993n, 1_152_921_504_606_846_976n];

export function answers(lib, historyText) {
  const events = lib.eventsFromJson(lib.decodeJson(historyText));
  if (!events.ok) throw new Error(events.error.message);
  const r = lib.applyAll(lib.createLimitsState({ historyBlocks: 288 }), events.events);
  if (!r.ok) throw new Error(r.error.message);
  const state = r.state;
  const out = {
    limits: lib.getLimits(state),
    window: lib.windowOf(state) ?? null,
    accounts: {},
  };
  for (const account of ACCOUNTS) {
    const checks = AMOUNTS.map((amount) => {
      const w = lib.checkWithdrawal(state, { account, amount });
      const d = lib.checkDeposit(state, { account, amount });
      return {
        amount,
        withdrawal: {
          ok: w.ok,
          reason: w.reason ?? null,
          limit: w.limit ?? null,
          availableAt: w.availableAt ?? null,
        },
        deposit: { ok: d.ok, reason: d.reason ?? null, limit: d.limit ?? null },
        whenAvailable: lib.whenAvailable(state, { account, amount }),
      };
    });
    out.accounts[account] = {
      entry: lib.getAccountLimits(state, account) ?? null,
      effective: lib.effectiveLimits(state, account),
      window: lib.windowOf(state, account) ?? null,
      checks,
    };
  }
  return lib.encodeJson(out);
}
