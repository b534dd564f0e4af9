/**
 * The operator dashboard served at `GET /`: one self-contained HTML page (inline styles and
 * script, no outside resource, so it works with no network) that reads `GET /limits`,
 * `GET /window` and `GET /mint-window` and refreshes itself (a depositor's check says when a
 * deposit would fit); given an operator token (kept in the tab's session
 * storage), it lists the pending changes from `GET /admin/changes`, each with what it
 * loosens. With nothing available, it says at which block the room opens. Amounts are read exactly (a small JSON reader keeps
 * integers as text, then BigInt), and every figure carries its exact value in `data-value`.
 * The script is `dashboard-script.ts`'s.
 */
import { DASHBOARD_SCRIPT } from './dashboard-script.js';

const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #5b6470; --bg: #f6f7f9; --card: #fff;
  --line: #d9dde3; --accent: #2563eb; --bar: #3b82f6; --warn-bg: #fff4e5; --warn: #9a3412; --ok: #15803d; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8eb; --muted: #9aa3ad; --bg: #111418; --card: #1a1e24;
  --line: #2d333b; --accent: #60a5fa; --bar: #60a5fa; --warn-bg: #3b2512; --warn: #fdba74; --ok: #4ade80; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: .5rem 1rem; padding: 1rem clamp(1rem, 3vw, 2rem); border-bottom: 1px solid var(--line); background: var(--card); }
header h1 { font-size: 1.15rem; margin: 0; }
header .status { color: var(--muted); font-size: .85rem; margin-left: auto; }
main { padding: 1rem clamp(1rem, 3vw, 2rem) 2rem; display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(min(100%, 28rem), 1fr)); }
section { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 1rem 1.1rem; min-width: 0; }
section.wide { grid-column: 1 / -1; }
h2 { font-size: .95rem; margin: 0 0 .75rem; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.banner { grid-column: 1 / -1; border-radius: 10px; padding: .8rem 1.1rem; background: var(--warn-bg); color: var(--warn); border: 1px solid currentColor; font-weight: 600; }
.banner[hidden], .error[hidden] { display: none; }
.error { grid-column: 1 / -1; border-radius: 10px; padding: .8rem 1.1rem; border: 1px solid #b91c1c; color: #b91c1c; }
.big { font-size: clamp(1.6rem, 5vw, 2.2rem); font-weight: 650; font-variant-numeric: tabular-nums; }
.unit { font-size: .55em; color: var(--muted); font-weight: 500; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: .75rem 0 0; }
dt { color: var(--muted); } dd { margin: 0; font-variant-numeric: tabular-nums; text-align: right; }
.gauge { height: .7rem; border-radius: 99px; background: var(--line); overflow: hidden; margin-top: .75rem; }
.gauge > div { height: 100%; background: var(--accent); width: 0; }
svg { width: 100%; height: 220px; display: block; }
svg .bar { fill: var(--bar); } svg .axis { stroke: var(--line); } svg text { fill: var(--muted); font-size: 11px; }
.note { color: var(--muted); font-size: .9rem; margin: .5rem 0 0; }
.tools { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-bottom: .75rem; }
input[type=search] { flex: 1 1 14rem; padding: .45rem .6rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); font: inherit; }
button { padding: .4rem .7rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); font: inherit; cursor: pointer; }
button:disabled { opacity: .4; cursor: default; }
.table { overflow-x: auto; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: .4rem .5rem; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; max-width: 18rem; overflow: hidden; text-overflow: ellipsis; }
th { color: var(--muted); font-weight: 600; font-size: .85rem; }
td.none { color: var(--muted); }
table.changes th, table.changes td { text-align: left; }
td.loosens { white-space: normal; }
.room { margin: .5rem 0 0; font-weight: 600; color: var(--warn); }
.room[hidden] { display: none; }
input[type=password] { flex: 1 1 14rem; padding: .45rem .6rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); font: inherit; }
`;

// The page's icon, inline: a browser asks for no /favicon.ico (which would be a 404 in its
// console). Three bars under a cap line, as the window chart draws them.
const ICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Cpath d='M1 3h14' stroke='%23c2410c' stroke-width='1.5'/%3E%3Cpath d='M2 15V9h3v6zM6.5 15V6h3v9zM11 15v-4h3v4z' fill='%232563eb'/%3E%3C/svg%3E";

/** The dashboard page: self-contained HTML. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>peg-limits</title>
<link rel="icon" href="${ICON}">
<style>${STYLE}</style>
</head>
<body>
<header><h1>peg-limits</h1><span id="tip">…</span><span class="status" id="updated">loading…</span></header>
<main>
<div class="banner" id="throttle" hidden>Throttle mode is on, started by <span id="initiator"></span>: withdrawal caps are tightened.</div>
<div class="error" id="breaker" hidden></div>
<div class="error" id="error" hidden></div>
<section>
  <h2>Available to withdraw now</h2>
  <div class="big" id="available">…</div>
  <p class="room" id="roomAt" hidden></p>
  <div class="gauge" aria-hidden="true"><div id="gauge"></div></div>
  <dl>
    <dt>Withdrawn in the window</dt><dd id="withdrawn">…</dd>
    <dt>Window cap</dt><dd id="rollingWithdrawalCap">…</dd>
    <dt>Window</dt><dd id="rollingWithdrawalBlocks">…</dd>
  </dl>
  <p class="note" id="capShare" hidden></p>
</section>
<section>
  <h2>Available to mint now</h2>
  <div class="big" id="availableToMint">…</div>
  <dl>
    <dt>Minted in the window</dt><dd id="minted">…</dd>
    <dt>Mint window cap</dt><dd id="rollingMintCap">…</dd>
    <dt>Mint window</dt><dd id="rollingMintBlocks">…</dd>
    <dt>Peg cap the signers read</dt><dd id="pegCapInForce">…</dd>
    <dt>Next release</dt><dd id="mintRelease">…</dd>
  </dl>
  <form class="tools" id="depositForm">
    <input type="search" id="depositAccount" placeholder="Account" aria-label="Depositor's account">
    <input type="search" id="depositAmount" placeholder="Amount (BTC)" aria-label="Deposit amount in BTC" inputmode="decimal">
    <button type="submit">Would it fit?</button>
  </form>
  <p class="note" id="depositAnswer"></p>
</section>
<section>
  <h2>Peg backing: <span id="integrityState">…</span></h2>
  <dl>
    <dt>Pegged total</dt><dd id="peggedTotal">…</dd>
    <dt>Reserves</dt><dd id="reserves">…</dd>
    <dt>Unbacked</dt><dd id="unbacked">…</dd>
    <dt>May be unbacked</dt><dd id="maxUnbacked">…</dd>
  </dl>
</section>
<section>
  <h2>Caps</h2>
  <dl>
    <dt>Per withdrawal</dt><dd id="perWithdrawalCap">…</dd>
    <dt>Per deposit</dt><dd id="perDepositCap">…</dd>
    <dt>Deposit minimum</dt><dd id="perDepositMinimum">…</dd>
    <dt>Peg cap in force</dt><dd id="pegCap">…</dd>
    <dt>Peg cap set</dt><dd id="pegCapFixed">…</dd>
  </dl>
</section>
<section class="wide">
  <h2>Rolling window, per block</h2>
  <svg id="chart" role="img" aria-label="Amount withdrawn per block in the rolling window"></svg>
  <p class="note"><span id="range"></span> · next release: <span id="nextRelease">…</span></p>
</section>
<section class="wide">
  <h2>Pending changes (<span id="changeCount">…</span>)</h2>
  <form class="tools" id="tokenForm">
    <input type="password" id="token" placeholder="Operator token (kept in this tab only)" aria-label="Operator token" autocomplete="off">
    <button id="showChanges" type="submit">Show changes</button>
    <span class="note" id="changesNote"></span>
  </form>
  <div class="table"><table class="changes">
    <thead><tr><th>Change</th><th>Proposed by</th><th>Loosens (before → after)</th><th>Applies at</th><th>Approvals</th></tr></thead>
    <tbody id="changes"></tbody>
  </table></div>
</section>
<section class="wide">
  <h2>Account entries (<span id="entryCount">0</span>)</h2>
  <div class="tools">
    <input type="search" id="search" placeholder="Search accounts" aria-label="Search accounts">
    <button id="prev" type="button">Previous</button><button id="next" type="button">Next</button>
    <span class="note" id="pageInfo"></span>
  </div>
  <div class="table"><table>
    <thead><tr><th>Account</th><th>Peg cap</th><th>Per deposit</th><th>Deposit min.</th><th>Per withdrawal</th><th>Window</th><th>Window cap</th></tr></thead>
    <tbody id="entries"></tbody>
  </table></div>
</section>
</main>
<script>${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
