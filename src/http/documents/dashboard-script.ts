/**
 * The dashboard's script (`dashboard.ts` serves it inline): plain browser JavaScript, no
 * build step, no outside code. It reads the limits and the window, draws them, follows
 * `GET /events` (or polls), and with an operator token lists the pending changes.
 */

/** The page's script, as the page inlines it. */
export const DASHBOARD_SCRIPT = `
'use strict';
const DECIMALS = 8, UNIT = 'BTC', PAGE = 50, REFRESH_MS = 5000;
const $ = (id) => document.getElementById(id);

// JSON with exact integers: numbers come back as their text, so amounts can become BigInt.
function parseExact(text) {
  let i = 0;
  const ws = () => { while (i < text.length && ' \\t\\n\\r'.includes(text[i])) i++; };
  function value() {
    ws();
    const c = text[i];
    if (c === '{') { i++; const o = {}; ws(); if (text[i] === '}') { i++; return o; }
      for (;;) { ws(); const k = string(); ws(); i++; o[k] = value(); ws(); if (text[i++] === '}') return o; } }
    if (c === '[') { i++; const a = []; ws(); if (text[i] === ']') { i++; return a; }
      for (;;) { a.push(value()); ws(); if (text[i++] === ']') return a; } }
    if (c === '"') return string();
    if (text.startsWith('true', i)) { i += 4; return true; }
    if (text.startsWith('false', i)) { i += 5; return false; }
    if (text.startsWith('null', i)) { i += 4; return null; }
    const m = /^-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?/.exec(text.slice(i, i + 40));
    if (!m) throw new Error('not JSON at ' + i);
    i += m[0].length; return m[0];
  }
  function string() {
    let j = i + 1, out = '';
    for (;;) { const c = text[j++];
      if (c === '"') break;
      if (c === '\\\\') { const e = text[j++];
        if (e === 'u') { out += String.fromCharCode(parseInt(text.slice(j, j + 4), 16)); j += 4; }
        else out += ({ n: '\\n', t: '\\t', r: '\\r', b: '\\b', f: '\\f' })[e] || e; }
      else out += c; }
    i = j; return out;
  }
  return value();
}

function btc(text) {
  if (text === null || text === undefined) return null;
  const v = BigInt(text), neg = v < 0n, a = neg ? -v : v, unit = 10n ** BigInt(DECIMALS);
  const whole = (a / unit).toLocaleString('en-US');
  const frac = (a % unit).toString().padStart(DECIMALS, '0').replace(/0+$/, '');
  return (neg ? '-' : '') + whole + (frac ? '.' + frac : '');
}

// An amount rounded to 2 decimals, for axis labels.
function rounded(v) {
  const unit = 10n ** BigInt(DECIMALS), cents = (v * 100n + unit / 2n) / unit;
  return (cents / 100n).toLocaleString('en-US') + '.' + (cents % 100n).toString().padStart(2, '0');
}

// Shows an amount (or "none" when unset) with its exact value in data-value.
function setAmount(el, text, unset = 'none') {
  el.dataset.value = text === null ? 'null' : text;
  el.textContent = text === null ? unset : btc(text) + ' ' + UNIT;
  el.title = text === null ? '' : text + ' sat';
}

// The last answer of each read with its ETag: asked again with If-None-Match, an unchanged
// one is a 304 without a body, and its value is the one parsed before.
const lastRead = new Map();
async function read(path) {
  const last = lastRead.get(path);
  const r = await fetch(new URL(path, location.href),
    { cache: 'no-store', headers: last ? { 'if-none-match': last.etag } : {} });
  const text = await r.text();
  if (r.status === 304 && last) { document.body.dataset.notModified = String(Number(document.body.dataset.notModified || 0) + 1); return last.value; }
  const body = parseExact(text);
  if (!r.ok) throw new Error((body && (body.message || body.detail)) || r.status);
  const etag = r.headers.get('etag');
  if (etag) lastRead.set(path, { etag, value: body });
  return body;
}

let entries = [], page = 0, filter = '';

function renderLimits(l) {
  setAmount($('available'), l.availableToWithdraw, 'no window');
  for (const f of ['pegCap', 'perDepositCap', 'perDepositMinimum', 'perWithdrawalCap', 'rollingWithdrawalCap'])
    setAmount($(f), l[f]);
  const b = $('rollingWithdrawalBlocks');
  b.dataset.value = l.rollingWithdrawalBlocks === null ? 'null' : l.rollingWithdrawalBlocks;
  b.textContent = l.rollingWithdrawalBlocks === null ? 'none' : l.rollingWithdrawalBlocks + ' blocks';
  const banner = $('throttle');
  banner.hidden = l.throttleModeInitiator === null;
  $('initiator').textContent = l.throttleModeInitiator || '';
  entries = Object.entries(l.accountCaps);
  $('entryCount').textContent = entries.length.toLocaleString('en-US');
  $('entryCount').dataset.value = String(entries.length);
  renderEntries();
}

function renderEntries() {
  const q = filter.toLowerCase();
  const shown = q ? entries.filter(([name]) => name.toLowerCase().includes(q)) : entries;
  const pages = Math.max(1, Math.ceil(shown.length / PAGE));
  page = Math.min(page, pages - 1);
  const body = $('entries');
  body.replaceChildren();
  for (const [name, e] of shown.slice(page * PAGE, page * PAGE + PAGE)) {
    const tr = document.createElement('tr');
    const cells = [name, e.pegCap, e.perDepositCap, e.perDepositMinimum, e.perWithdrawalCap,
      e.rollingWithdrawalBlocks, e.rollingWithdrawalCap];
    cells.forEach((v, k) => {
      const td = document.createElement('td');
      if (k === 0) { td.textContent = v; td.title = v; }
      else if (v === null) { td.textContent = '—'; td.className = 'none'; td.dataset.value = 'null'; }
      else if (k === 5) { td.textContent = v + ' blocks'; td.dataset.value = v; }
      else { td.textContent = btc(v) + ' ' + UNIT; td.dataset.value = v; td.title = v + ' sat'; }
      tr.append(td);
    });
    body.append(tr);
  }
  $('pageInfo').textContent = shown.length === 0 ? 'no entries' :
    'page ' + (page + 1) + ' of ' + pages + ' · ' + shown.length.toLocaleString('en-US') + ' shown';
  $('prev').disabled = page === 0;
  $('next').disabled = page >= pages - 1;
}

function renderWindow(w) {
  // A window that reaches below where the history starts (a feed started mid-chain): the
  // room is unknown, not absent.
  if (w.complete === false) {
    const a = $('available');
    a.dataset.value = 'null';
    if (w.heldFrom !== null && w.heldFrom !== undefined) {
      // Blocks held past the chain bounds: the chain moved on, and what they request is unknown.
      a.textContent = 'unknown while blocks are held';
      a.title = 'blocks from ' + Number(w.heldFrom).toLocaleString('en-US') + ' are held past the chain bounds until an operator releases or drops them: withdrawals wait';
    } else {
      a.textContent = 'unknown until block ' + Number(w.completeAt).toLocaleString('en-US');
      a.title = 'the window reaches below the first block the service was told of: withdrawals wait';
    }
  }
  $('tip').textContent = w.tip === null ? 'no block yet' : 'tip ' + Number(w.tip).toLocaleString('en-US');
  $('tip').dataset.value = w.tip === null ? 'null' : w.tip;
  setAmount($('withdrawn'), w.withdrawn);
  // A cap set as a share of the pegged total: what the cap in force is the lower of.
  const share = $('capShare');
  share.hidden = w.rollingWithdrawalCapShare === null || w.rollingWithdrawalCapShare === undefined;
  if (!share.hidden) {
    const pct = Number(w.rollingWithdrawalCapShare) / 100;
    share.textContent = 'The cap in force is the lower of ' + btc(w.rollingWithdrawalCapFixed) + ' ' + UNIT +
      ' and ' + pct.toLocaleString('en-US') + '% of the ' + btc(w.peggedTotal) + ' ' + UNIT + ' pegged in' +
      (BigInt(w.peggedTotal) === 0n ? ' (no total observed yet: nothing may be withdrawn)' : '') + '.';
    share.dataset.fixed = w.rollingWithdrawalCapFixed; share.dataset.share = w.rollingWithdrawalCapShare; share.dataset.total = w.peggedTotal;
  }
  const cap = w.rollingWithdrawalCap === null ? 0n : BigInt(w.rollingWithdrawalCap);
  const used = BigInt(w.withdrawn);
  $('gauge').style.width = cap === 0n ? '0' : Math.min(100, Number((used * 10000n) / cap) / 100) + '%';
  $('range').textContent = w.from === null ? 'no window yet' :
    'blocks ' + Number(w.from).toLocaleString('en-US') + ' – ' + Number(w.to).toLocaleString('en-US');
  const next = $('nextRelease');
  if (w.nextRelease === null) { next.textContent = 'nothing withdrawn in the window'; next.dataset.height = 'null'; }
  else {
    next.dataset.height = w.nextRelease.height;
    next.dataset.value = w.nextRelease.amount;
    next.textContent = btc(w.nextRelease.amount) + ' ' + UNIT + ' frees up at block ' + Number(w.nextRelease.height).toLocaleString('en-US');
  }
  renderRoom(w);
  drawChart(w);
}

// When nothing is available: the block at which the window first holds less than its cap
// (the sums leave it oldest first), which may be later than the next release.
function renderRoom(w) {
  const el = $('roomAt');
  el.hidden = true;
  if (w.complete === false || w.rollingWithdrawalCap === null || w.availableToWithdraw === null) return;
  if (BigInt(w.availableToWithdraw) > 0n) return;
  const cap = BigInt(w.rollingWithdrawalCap), blocks = Number(w.rollingWithdrawalBlocks);
  el.hidden = false;
  if (cap === 0n) { el.textContent = 'No room while the window cap is 0'; el.dataset.height = 'null'; return; }
  let held = BigInt(w.withdrawn), at = null;
  for (const s of w.sums) {
    if (held < cap) break;
    held -= BigInt(s.amount);
    at = Number(s.height) + blocks;
  }
  el.dataset.height = at === null ? 'null' : String(at);
  el.textContent = at === null ? '' : 'Room opens at block ' + at.toLocaleString('en-US') +
    ', when the window holds less than its cap of ' + btc(w.rollingWithdrawalCap) + ' ' + UNIT;
}

// The pending changes, for an operator: GET /admin/changes with the token given here, kept
// in this tab only (sessionStorage), never in the address or lasting storage.
const FIELD_NAMES = { pegCap: 'Peg cap', accountPegCap: 'Peg cap', perDepositCap: 'Per deposit',
  perDepositMinimum: 'Deposit minimum', perWithdrawalCap: 'Per withdrawal',
  rollingWithdrawalBlocks: 'Window', accountRollingWithdrawalBlocks: 'Window',
  rollingWithdrawalCap: 'Window cap', accountRollingWithdrawalCap: 'Window cap',
  rollingWithdrawalCapShare: 'Window cap share', accountRollingWithdrawalCapShare: 'Window cap share',
  rollingMintBlocks: 'Mint window', accountRollingMintBlocks: 'Mint window',
  rollingMintCap: 'Mint window cap', accountRollingMintCap: 'Mint window cap',
  rollingMintCapShare: 'Mint window cap share', accountRollingMintCapShare: 'Mint window cap share' };
const BLOCK_FIELDS = ['rollingWithdrawalBlocks', 'accountRollingWithdrawalBlocks', 'rollingMintBlocks', 'accountRollingMintBlocks'];
const SHARE_FIELDS = ['rollingWithdrawalCapShare', 'accountRollingWithdrawalCapShare', 'rollingMintCapShare', 'accountRollingMintCapShare'];

function fieldValue(field, v) {
  if (v === null) return 'none';
  if (SHARE_FIELDS.includes(field)) return Number(v) / 100 + '% of the pegged total';
  return BLOCK_FIELDS.includes(field) ? Number(v).toLocaleString('en-US') + ' blocks' : btc(v) + ' ' + UNIT;
}

function looseningText(l) {
  if (l.kind === 'throttleEnded') return 'ends throttle mode (started by ' + l.initiator + ')';
  if (l.kind === 'keyRevoked') return 'revokes the throttle key ' + l.name;
  if (l.kind === 'mintHistory') return 'lowers the start of the mint history: block ' + l.before + ' → ' + (l.after === null ? 'the start' : l.after);
  if (l.kind === 'integrity') return "the peg's check: " + l.field + ' ' + l.before + ' → ' + (l.after === null ? 'off' : l.after);
  if (l.kind === 'breakerCleared') return "clears the peg's tripped breaker";
  const who = l.account === null ? '' : l.account + ': ';
  const beneath = l.view === 'configured' ? ' (beneath throttle mode)' : '';
  return who + FIELD_NAMES[l.field] + ': ' + fieldValue(l.field, l.before) + ' → ' + fieldValue(l.field, l.after) + beneath;
}

function appliesText(c) {
  const at = c.effectiveAt === null ? null : 'block ' + Number(c.effectiveAt).toLocaleString('en-US');
  if (c.delayBlocks === null) return 'at its quorum only';
  return at === null ? c.delayBlocks + ' blocks after the first block' : at;
}

// Whether the service has operators: the page is served saying so (data-operators), so that a
// visitor's page asks no operator route, and none fails in the browser's console.
const OPERATORS = document.body.dataset.operators === 'true';

async function readChanges() {
  const token = sessionStorage.getItem('peg-limits-token');
  const note = $('changesNote');
  if (!OPERATORS) { note.textContent = 'This service has no operators: nothing waits.'; $('changeCount').textContent = '0'; return; }
  if (!token) {
    note.textContent = 'Give an operator token to see the pending changes.';
    $('changeCount').textContent = '—';
    $('changes').replaceChildren();
    return;
  }
  const r = await fetch(new URL('admin/changes', location.href),
    { cache: 'no-store', headers: { authorization: 'Bearer ' + token } });
  const body = parseExact(await r.text());
  if (r.status === 404) { note.textContent = 'This service has no operators: nothing waits.'; $('changeCount').textContent = '0'; return; }
  if (r.status === 401) {
    note.textContent = token ? 'The token was refused (401): give an operator token.' : 'Give an operator token to see the pending changes.';
    $('changeCount').textContent = '—';
    $('changes').replaceChildren();
    return;
  }
  if (!r.ok) throw new Error((body && (body.message || body.detail)) || r.status);
  note.textContent = body.length === 0 ? 'No change is waiting.' : '';
  $('changeCount').textContent = String(body.length);
  const rows = $('changes');
  rows.replaceChildren();
  for (const c of body) {
    const tr = document.createElement('tr');
    const approvals = Number(c.quorum) === 0 ? 'by its delay' :
      c.approvals.length + ' of ' + c.quorum + ': ' + c.approvals.join(', ');
    const cells = ['#' + c.id, c.proposedBy, c.loosens.map(looseningText).join(' · '), appliesText(c), approvals];
    cells.forEach((text, k) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (k === 2) td.className = 'loosens';
      tr.append(td);
    });
    tr.dataset.id = c.id;
    rows.append(tr);
  }
}

function drawChart(w) {
  const svg = $('chart');
  const ns = 'http://www.w3.org/2000/svg';
  svg.replaceChildren();
  // Drawn at the element's own width, so bars and labels keep their shape on any screen.
  const W = Math.max(280, Math.round(svg.getBoundingClientRect().width) || 800), H = 220, pad = 28;
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  const line = (x1, y1, x2, y2) => { const l = document.createElementNS(ns, 'line');
    Object.entries({ x1, y1, x2, y2 }).forEach(([k, v]) => l.setAttribute(k, v)); l.setAttribute('class', 'axis'); svg.append(l); };
  const label = (x, y, text, anchor) => { const t = document.createElementNS(ns, 'text');
    t.setAttribute('x', x); t.setAttribute('y', y); t.setAttribute('text-anchor', anchor); t.textContent = text; svg.append(t); };
  line(pad, H - pad, W - 4, H - pad);
  if (w.from === null) { label(W / 2, H / 2, 'no window', 'middle'); return; }
  const from = Number(w.from), to = Number(w.to), span = to - from + 1;
  // Bars against the larger of the biggest block and an even share of the cap.
  let top = w.rollingWithdrawalCap === null ? 1n : BigInt(w.rollingWithdrawalCap) / BigInt(Math.max(1, Math.min(span, 24)));
  for (const s of w.sums) if (BigInt(s.amount) > top) top = BigInt(s.amount);
  if (top === 0n) top = 1n;
  const width = (W - pad - 4) / span;
  for (const s of w.sums) {
    const h = Math.max(2, (Number((BigInt(s.amount) * 10000n) / top) / 10000) * (H - 2 * pad));
    const r = document.createElementNS(ns, 'rect');
    r.setAttribute('class', 'bar');
    r.setAttribute('x', pad + (Number(s.height) - from) * width);
    r.setAttribute('y', H - pad - h);
    r.setAttribute('width', Math.max(2, width - (width > 4 ? 1 : 0)));
    r.setAttribute('height', h);
    r.dataset.height = s.height; r.dataset.value = s.amount;
    const t = document.createElementNS(ns, 'title');
    t.textContent = 'block ' + s.height + ': ' + btc(s.amount) + ' ' + UNIT;
    r.append(t); svg.append(r);
  }
  label(pad, H - 8, from.toLocaleString('en-US'), 'start');
  label(W - 4, H - 8, to.toLocaleString('en-US'), 'end');
  line(pad, pad, W - 4, pad);
  label(pad, pad - 6, 'scale: ' + rounded(top) + ' ' + UNIT + ' per block', 'start');
}

// The mint window: what the signers may still mint, the peg cap they read, the next release.
function renderMintWindow(w, l) {
  setAmount($('availableToMint'), w.availableToMint, w.rollingWithdrawalBlocks === null ? 'no mint window' : 'unknown');
  setAmount($('minted'), w.rollingWithdrawalBlocks === null ? null : w.withdrawn);
  setAmount($('rollingMintCap'), w.rollingWithdrawalCap);
  const b = $('rollingMintBlocks');
  b.dataset.value = w.rollingWithdrawalBlocks === null ? 'null' : w.rollingWithdrawalBlocks;
  b.textContent = w.rollingWithdrawalBlocks === null ? 'none' : w.rollingWithdrawalBlocks + ' blocks';
  setAmount($('pegCapInForce'), l.pegCap);
  setAmount($('pegCapFixed'), w.pegCapFixed);
  const r = $('mintRelease');
  r.dataset.height = w.nextRelease === null ? 'null' : String(w.nextRelease.height);
  r.textContent = w.nextRelease === null ? 'nothing minted in the window' :
    btc(w.nextRelease.amount) + ' ' + UNIT + ' at block ' + Number(w.nextRelease.height).toLocaleString('en-US');
}

// A depositor's check: would this deposit fit now, and if a mint window refuses it, when.
const DEPOSIT_REASONS = { below_minimum: 'below the minimum', above_per_deposit_cap: 'above the cap per deposit',
  peg_cap_exceeded: 'beyond the peg cap', account_peg_cap_exceeded: "beyond the account's peg cap",
  mint_window_incomplete: 'the mint window is not complete yet', rolling_mint_cap_exceeded: 'more than the mint window has room for',
  account_rolling_mint_cap_exceeded: "more than the account's mint window has room for", peg_unbacked: 'the peg is unbacked',
  reserves_unknown: 'the reserves are unknown', invalid_account: 'not an account name', invalid_amount: 'not an amount' };
function sats(text) {
  const m = /^([0-9]{1,11})(?:[.]([0-9]{1,8}))?$/.exec(text.trim());
  return m === null ? null : (BigInt(m[1]) * 10n ** 8n + BigInt((m[2] || '').padEnd(8, '0'))).toString();
}
async function checkDeposit(account, amountText) {
  const answer = $('depositAnswer');
  const amount = sats(amountText);
  if (account === '' || amount === null) { answer.textContent = 'Give an account and an amount in BTC (up to 8 decimals).'; return; }
  const v = await read('limits/' + encodeURIComponent(account) + '/deposits/' + amount);
  answer.dataset.availableAt = v.availableAt === null ? 'null' : String(v.availableAt);
  if (v.ok) { answer.textContent = btc(amount) + ' ' + UNIT + ' fits now.'; return; }
  const why = DEPOSIT_REASONS[v.reason] || v.reason;
  answer.textContent = 'Not now: ' + why + (v.limit === null ? '' : ' (room ' + btc(v.limit) + ' ' + UNIT + ')') +
    (v.availableAt === null ? '; no block is known at which it would fit.' : '; it would fit from block ' + Number(v.availableAt).toLocaleString('en-US') + ' if nothing else is minted.');
}

// The check of the peg's backing: a red banner while the limits fail closed on it.
const INTEGRITY_STATES = { off: 'no check', backed: 'backed', reserves_unknown: 'reserves unknown', tripped: 'breaker tripped' };
function renderIntegrity(i) {
  $('integrityState').textContent = INTEGRITY_STATES[i.state] || i.state;
  setAmount($('peggedTotal'), i.peggedTotal);
  setAmount($('reserves'), i.reserves, 'not read');
  $('reserves').title = i.reservesHeight === null ? '' : 'read at block ' + i.reservesHeight;
  setAmount($('unbacked'), i.unbacked, 'unknown');
  setAmount($('maxUnbacked'), i.maxUnbacked, 'no check');
  const b = $('breaker');
  b.hidden = i.state !== 'tripped' && i.state !== 'reserves_unknown';
  b.textContent = i.state === 'tripped'
    ? 'The peg was unbacked ' + (i.tripped.height === null ? 'before any block' : 'at block ' + Number(i.tripped.height).toLocaleString('en-US')) + ' (' + btc(i.tripped.unbacked) + ' ' + UNIT + ' more minted than held): every cap reads 0 until an operator clears the breaker.'
    : 'The reserves backing the peg are not known: every cap reads 0 until a fresh reading.';
}

async function refresh() {
  try {
    const [limits, window, integrity, mints] = await Promise.all([read('limits'), read('window'), read('integrity'), read('mint-window')]);
    renderLimits(limits);
    renderWindow(window);
    renderMintWindow(mints, limits);
    renderIntegrity(integrity);
    await readChanges();
    $('error').hidden = true;
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    document.body.dataset.loaded = 'true';
  } catch (e) {
    $('error').hidden = false;
    $('error').textContent = 'Could not read the service: ' + e.message + ' (retrying)';
  }
}

$('tokenForm').addEventListener('submit', (e) => {
  e.preventDefault();
  const token = $('token').value.trim();
  $('token').value = '';
  if (token) sessionStorage.setItem('peg-limits-token', token); else sessionStorage.removeItem('peg-limits-token');
  readChanges().catch((err) => { $('changesNote').textContent = 'Could not read the changes: ' + err.message; });
});
$('depositForm').addEventListener('submit', (e) => {
  e.preventDefault();
  checkDeposit($('depositAccount').value.trim(), $('depositAmount').value).catch((err) => { $('depositAnswer').textContent = 'Could not check: ' + err.message; });
});
$('search').addEventListener('input', (e) => { filter = e.target.value; page = 0; renderEntries(); });
$('prev').addEventListener('click', () => { page--; renderEntries(); });
$('next').addEventListener('click', () => { page++; renderEntries(); });
refresh();
// Live: every change arrives on the stream of changes (GET /events); the window is read
// again with it. Where there is no stream (a service without the server), poll.
let polling;
function poll() { polling = polling || setInterval(refresh, REFRESH_MS); }
if (typeof EventSource === 'function') {
  const events = new EventSource(new URL('events', location.href));
  events.addEventListener('limits', async (e) => {
    try {
      const limits = parseExact(e.data);
      renderLimits(limits);
      renderWindow(await read('window'));
      renderMintWindow(await read('mint-window'), limits);
      renderIntegrity(await read('integrity'));
      await readChanges();
      $('error').hidden = true;
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString() + ' (live)';
      document.body.dataset.loaded = 'true';
      document.body.dataset.live = 'true';
    } catch (err) {
      refresh();
    }
  });
  // A stream refused for good (no stream here): poll instead. Otherwise it reconnects.
  events.onerror = () => { if (events.readyState === 2) poll(); };
} else poll();
`;
