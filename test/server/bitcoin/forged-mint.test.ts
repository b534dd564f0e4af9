/**
 * The attack, end to end through the command: sBTC minted and backed, then sBTC minted that
 * no BTC backs (a signer bug accepting a fake deposit), across a few blocks. The service is
 * fed by a Stacks node (its event observer and its RPC) and reads the signers' wallet from
 * Bitcoin Core after each burn block (a double that answers as Bitcoin Core documents
 * `scantxoutset`). From the first reading after the forged mint, the limits are zero, every
 * withdrawal is refused, the alert arrives with the figures; reserves that recover do not
 * reopen it; only an operator's clear does.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, expect, test } from 'vitest';
import { decodeJson } from '../../../src/index.js';
import { signersDescriptor } from '../../../src/server/bitcoin/index.js';
import { type Bitcoind, startBitcoind } from '../../support/bitcoind.js';
import { expectEmily } from '../../support/emily.js';
import { tempDir, waitFor } from '../../support/proc.js';
import { SbtcChain, startNodeRpc } from '../../support/sbtc-chain.js';
import {
  ALICE,
  BOB,
  config,
  nodes,
  postBlock,
  serve,
  stopAll,
} from '../../support/sbtc-service.js';
import { TOKEN } from '../../support/tokens.js';

const KEY1 = `02${'11'.repeat(32)}`;
const KEY2 = `03${'22'.repeat(32)}`;
let bitcoind: Bitcoind | undefined;
const alerts: Array<Record<string, unknown>> = [];
let receiver: Server | undefined;

afterAll(async () => {
  await stopAll();
  await bitcoind?.close();
  receiver?.closeAllConnections();
  receiver?.close();
});

async function alertReceiver(): Promise<string> {
  receiver = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      alerts.push(decodeJson(text) as Record<string, unknown>);
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`;
}

test('a forged mint is never withdrawable: zero limits from the first reading after it, until an operator clears the breaker', async () => {
  const chain = new SbtcChain();
  // The past: the signers' key set, and 5 BTC deposited (and held by their wallet).
  chain.mine(
    [
      { kind: 'rotate', key: KEY1 },
      { kind: 'deposit', recipient: BOB, amount: 500_000_000n },
    ],
    { burnHeight: 100 },
  );
  const node = await startNodeRpc(chain);
  nodes.push(node);
  bitcoind = await startBitcoind();
  const btc = bitcoind;
  btc.wallets.set(signersDescriptor(KEY1), 500_000_000n);
  btc.height = 100;
  const dir = tempDir();
  config(dir);
  const p = await serve(
    dir,
    [
      '--stacks-rpc',
      node.url,
      '--bitcoin-rpc',
      btc.urlWithPassword,
      '--alert-url',
      await alertReceiver(),
    ],
    undefined,
    { PEG_LIMITS_ADMIN_TOKEN: TOKEN },
  );
  // The password never shows.
  await waitFor(() => /reserves reader:/.test(p.stdout + p.stderr), 5000);
  expect(p.stdout + p.stderr).toMatch(
    /reserves reader: scantxoutset through http:\/\/\*\*\*:\*\*\*@127/,
  );
  expect(p.stdout + p.stderr).not.toMatch(/pw-[0-9a-f]/);
  const admin = (events: unknown) =>
    fetch(`${p.url}/admin/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(events),
    });
  const integrity = async () =>
    (await (await fetch(`${p.url}/integrity`)).json()) as Record<string, unknown>;
  // The reading of burn height `h`, applied.
  const readAt = (h: number) =>
    waitFor(async () => (await integrity()).reservesHeight === h, 10_000);

  // An operator turns the check on: up to 0.5 BTC unbacked (a burn block's deposits are minted
  // before the next reading sees their BTC: the tolerance covers them), reserves at most 3
  // blocks old.
  expect(
    (await admin({ type: 'pegIntegritySet', maxUnbacked: 50_000_000, reservesMaxAge: 3 })).status,
  ).toBe(200);

  // Blocks with deposits the signers really received: backed at every reading.
  let wallet = 500_000_000n;
  for (const h of [101, 102, 103]) {
    wallet += 20_000_000n;
    btc.wallets.set(signersDescriptor(KEY1), wallet);
    btc.height = h;
    const b = chain.mine([{ kind: 'deposit', recipient: BOB, amount: 20_000_000n }], {
      burnHeight: h,
    });
    expect(await postBlock(p, b)).toBe(200);
    await readAt(h);
    expect(await integrity()).toMatchObject({
      state: 'backed',
      unbacked: 0,
      peggedTotal: Number(wallet),
    });
  }
  const before = await fetch(`${p.url}/limits/${ALICE}/withdrawals/1000`);
  expect(await before.json()).toMatchObject({ ok: true });

  // The forged mint: 3 BTC of sBTC that no BTC backs, at burn height 104.
  btc.height = 104;
  const forged = chain.mine([{ kind: 'deposit', recipient: BOB, amount: 300_000_000n }], {
    burnHeight: 104,
  });
  expect(await postBlock(p, forged)).toBe(200);
  await readAt(104);
  expect(await integrity()).toMatchObject({
    state: 'tripped',
    unbacked: 300_000_000,
    tripped: {
      height: 104,
      peggedTotal: Number(wallet) + 300_000_000,
      reserves: Number(wallet),
      unbacked: 300_000_000,
    },
  });
  // GET /limits shows zero caps, valid against Emily's own schema: the signers admit nothing.
  const limits = await fetch(`${p.url}/limits`);
  const limitsBody = await limits.text();
  expectEmily('/limits', 'GET', { status: limits.status, body: limitsBody });
  expect(JSON.parse(limitsBody)).toMatchObject({
    perWithdrawalCap: 0,
    perDepositCap: 0,
    rollingWithdrawalCap: 0,
    availableToWithdraw: 0,
  });
  for (const account of [ALICE, BOB]) {
    const check = await (await fetch(`${p.url}/limits/${account}/withdrawals/1`)).json();
    expect(check).toEqual({ ok: false, reason: 'peg_unbacked', limit: 0, availableAt: null });
  }
  // The alert arrives, with the figures.
  await waitFor(() => alerts.some((a) => a.type === 'pegBreakerTripped'), 10_000);
  expect(alerts.find((a) => a.type === 'pegBreakerTripped')).toMatchObject({
    height: 104n,
    peggedTotal: wallet + 300_000_000n,
    reserves: wallet,
    unbacked: 300_000_000n,
    maxUnbacked: 50_000_000n,
  });

  // The signers rotate their key and the reserves recover (someone sends the 3 BTC): the
  // reader scans both wallets, and still nothing reopens.
  btc.wallets.set(signersDescriptor(KEY2), 300_000_000n);
  btc.height = 105;
  const rotated = chain.mine([{ kind: 'rotate', key: KEY2 }], { burnHeight: 105 });
  expect(await postBlock(p, rotated)).toBe(200);
  await readAt(105);
  expect(btc.scans.at(-1)).toEqual([signersDescriptor(KEY1), signersDescriptor(KEY2)]);
  expect(await integrity()).toMatchObject({ state: 'tripped', unbacked: 0 });
  expect((await (await fetch(`${p.url}/limits`)).json()).availableToWithdraw).toBe(0);

  // A feeder's credential cannot clear it; only an operator holding limits can.
  const cleared = await admin({ type: 'pegBreakerCleared' });
  expect(cleared.status).toBe(200);
  expect(await integrity()).toMatchObject({ state: 'backed', tripped: null });
  expect((await (await fetch(`${p.url}/limits`)).json()).perWithdrawalCap).not.toBe(0);
  const after = await (await fetch(`${p.url}/limits/${ALICE}/withdrawals/1000`)).json();
  expect(after).toMatchObject({ ok: true });
  await waitFor(() => alerts.some((a) => a.type === 'pegBreakerCleared'), 10_000);
  // The trail names who read the reserves and who cleared the breaker.
  const trail = (await (
    await fetch(`${p.url}/admin/audit?limit=1000`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })
  ).json()) as Array<{ actor: { name?: string }; events: Array<{ type: string }> }>;
  expect(
    trail.filter((r) => r.events[0]?.type === 'reservesObserved').map((r) => r.actor.name),
  ).toContain('bitcoin-reader');
  expect(trail.at(-1)).toMatchObject({
    actor: { name: 'admin' },
    events: [{ type: 'pegBreakerCleared' }],
  });
});
