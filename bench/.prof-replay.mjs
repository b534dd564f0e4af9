import { applyAll, createLimitsState } from '../dist/index.js';
import { HISTORY, limitsFor, MutableFloor, stream } from './workload.mjs';
const accounts = 500;
const noWindows = process.argv.includes('--no-windows');
const { events } = stream({ blocks: 11_800, perBlock: 16, accounts });
const lim = noWindows ? { ...limitsFor(accounts), accountCaps: {} } : limitsFor(accounts);
const build = () => { const r = applyAll(createLimitsState({ historyBlocks: HISTORY, limits: lim }), events); if (!r.ok) throw r.error; return r.state; };
const floor = () => { const f = new MutableFloor(accounts, { ownWindows: false }); for (const e of events) f.apply(e); return f; };
const only = process.argv[2];
const ratios = []; const a = []; const b = [];
for (let r = 0; r < 12; r++) {
  let t = performance.now(); if (only !== 'floor') build(); const ta = performance.now() - t;
  t = performance.now(); if (only !== 'lib') floor(); const tb = performance.now() - t;
  if (r >= 2) { a.push(ta); b.push(tb); ratios.push(ta / tb); }
}
const med = (x) => x.slice().sort((p, q) => p - q)[x.length >> 1];
console.log(`lib ${med(a).toFixed(1)} ms floor ${med(b).toFixed(1)} ms ratio ${med(ratios).toFixed(2)}`);
