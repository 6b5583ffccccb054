import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import {
  AttachmentSigner,
  createFleetActivityDriver,
  SimulatorModel,
  startSimulator,
  type AccountSpec,
  type RunningSimulator,
  type SimulatorOptions,
} from '../../src/simulator/index.ts';
import { signingSecret } from '../../src/simulator/signing.ts';
import type { TicketDetail, TicketListItem } from '../../src/simulator/types.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../src/time.ts';

/** One simulator, many accounts: real HTTP on ephemeral ports, time on a ManualClock, never slept on. */

const started: RunningSimulator[] = [];

async function simulator(accounts: AccountSpec[], opts: SimulatorOptions = {}) {
  const clock = new ManualClock();
  const sim = await startSimulator({ clock, openTickets: 6, resolvedTickets: 20, accounts, ...opts });
  started.push(sim);
  return { sim, clock };
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((sim) => sim.close()));
});

const headers = (token: string) => ({ authorization: `Bearer ${token}`, accept: 'application/json' });
const get = (sim: RunningSimulator, token: string, path: string) => fetch(`${sim.url}${path}`, { headers: headers(token) });
const ids = async (res: Response) => ((await res.json()) as TicketListItem[]).map((t) => t.id);

describe('a simulator of many accounts', () => {
  it('serves each token its own dataset: disjoint tickets, another account’s ticket is a 404', async () => {
    const { sim } = await simulator([{ token: 'acme' }, { token: 'globex', openTickets: 9 }]);
    const acme = [...(await ids(await get(sim, 'acme', '/api/v1/tickets'))), ...(await ids(await get(sim, 'acme', '/api/v1/tickets/resolved')))];
    const globexOpen = await ids(await get(sim, 'globex', '/api/v1/tickets'));
    const globex = [...globexOpen, ...(await ids(await get(sim, 'globex', '/api/v1/tickets/resolved')))];
    expect(acme).toHaveLength(26);
    expect(globexOpen).toHaveLength(9);
    expect(globex.filter((id) => acme.includes(id))).toEqual([]);
    expect((await get(sim, 'globex', `/api/v1/ticket/${acme[0]}`)).status).toBe(404);
    expect((await get(sim, 'acme', `/api/v1/ticket/${acme[0]}`)).status).toBe(200);
    // A reply through one account changes that account alone.
    const res = await fetch(`${sim.url}/api/v1/ticket/${acme[0]}/reply`, {
      method: 'POST',
      headers: { ...headers('acme'), 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'On it.' }),
    });
    expect(res.status).toBe(201);
    expect(sim.account('acme')!.model.groundTruth().find((t) => t.id === acme[0])!.messages.at(-1)!.message).toBe('On it.');
    expect(sim.account('globex')!.model.hasTicket(acme[0]!)).toBe(false);
    // Seeds count up from the simulator's when the spec gives none.
    expect(sim.accounts().map((a) => [a.ordinal, a.seed])).toEqual([[1, 1], [2, 2]]);
  });

  it('limits each token alone: one account’s 429 leaves another’s minute untouched', async () => {
    const { sim, clock } = await simulator([{ token: 'a', minuteLimit: 3 }, { token: 'b' }]);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) remaining.push((await get(sim, 'a', '/api/v1/tickets')).headers.get('x-ratelimit-remaining')!);
    expect(remaining).toEqual(['2', '1', '0']);
    const refused = await get(sim, 'a', '/api/v1/tickets');
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ error: 'Too Many Attempts.' });
    expect(refused.headers.get('x-ratelimit-limit')).toBe('3');
    expect(refused.headers.get('retry-after')).toBe('60');
    const other = await get(sim, 'b', '/api/v1/tickets');
    expect(other.status).toBe(200);
    expect([other.headers.get('x-ratelimit-limit'), other.headers.get('x-ratelimit-remaining')]).toEqual(['60', '59']);
    clock.advance(MINUTE_MS);
    expect((await get(sim, 'a', '/api/v1/tickets')).status).toBe(200);
    expect(sim.account('a')!.log.map((e) => e.status)).toEqual([200, 200, 200, 429, 200]);
    expect(sim.account('b')!.log.map((e) => e.status)).toEqual([200]);
  });

  it('counts the rolling 24 h window per token', async () => {
    const { sim, clock } = await simulator([{ token: 'a', dailyLimit: 4 }, { token: 'b', dailyLimit: 4 }]);
    for (let i = 0; i < 4; i++) {
      expect((await get(sim, 'a', '/api/v1/tickets')).status).toBe(200);
      clock.advance(HOUR_MS);
    }
    const refused = await get(sim, 'a', '/api/v1/tickets');
    expect(refused.status).toBe(429);
    // The first request of the window leaves it 20 h from now.
    expect(refused.headers.get('retry-after')).toBe(String(20 * 3600));
    for (let i = 0; i < 4; i++) expect((await get(sim, 'b', '/api/v1/tickets')).status).toBe(200);
    expect((await get(sim, 'b', '/api/v1/tickets')).status).toBe(429);
    clock.advance(DAY_MS - 4 * HOUR_MS);
    expect((await get(sim, 'a', '/api/v1/tickets')).status).toBe(200);
  });

  it('answers an unknown or missing token as the spec’s 401, logged as nobody’s', async () => {
    const { sim } = await simulator([{ token: 'a', minuteLimit: 5 }, { token: 'b' }]);
    for (const auth of [{ authorization: 'Bearer nope' }, {}, { authorization: 'Bearer a b' }] as Record<string, string>[]) {
      const res = await fetch(`${sim.url}/api/v1/tickets`, { headers: { accept: 'application/json', ...auth } });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(await res.json()).toEqual({ error: 'Unauthenticated.' });
      expect([res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining')]).toEqual(['60', '60']);
    }
    const page = await fetch(`${sim.url}/api/v1/tickets`, { headers: { authorization: 'Bearer nope' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<form[^>]*action="\/login"/);
    expect(sim.unclaimed.map((e) => e.status)).toEqual([401, 401, 401, 200]);
    expect(sim.accounts().flatMap((a) => a.log)).toEqual([]);
    expect(sim.accounts().some((a) => a.built)).toBe(false);
    expect((await get(sim, 'a', '/api/v1/tickets')).headers.get('x-ratelimit-remaining')).toBe('4');
  });

  it('builds an account on its first request, equal to one built eagerly with the same seed when it was added', async () => {
    const { sim, clock } = await simulator([{ token: 'first' }]);
    const addedAt = clock.now();
    const lazy = sim.addAccount({ token: 'late', seed: 77, openTickets: 12, resolvedTickets: 30 });
    clock.advance(3 * HOUR_MS);
    expect(lazy.built).toBe(false);
    const eager = new SimulatorModel({
      seed: 77,
      clock: new ManualClock(addedAt),
      openTickets: 12,
      resolvedTickets: 30,
      signer: new AttachmentSigner(signingSecret(77), `${sim.storageUrl}/a/2`),
    });
    for (const [path, group] of [['', 'open'], ['/self', 'self'], ['/unassigned', 'unassigned'], ['/resolved', 'resolved']] as const) {
      expect(await (await get(sim, 'late', `/api/v1/tickets${path}`)).json()).toEqual(eager.list(group));
    }
    expect(lazy.built).toBe(true);
    expect(sim.account('first')!.built).toBe(false);
    expect(lazy.model.groundTruth()).toEqual(eager.groundTruth());
    const withFile = eager.groundTruth().find((t) => t.attachments.length > 0)!;
    const detail = (await (await get(sim, 'late', `/api/v1/ticket/${withFile.id}`)).json()) as TicketDetail;
    expect(detail).toEqual(eager.detail(withFile.id, clock.now()));
    // Its files are served under its own prefix, and under no other account's.
    const link = detail.attachments[0]!.url;
    expect(link.startsWith(`${sim.storageUrl}/a/2/files/`)).toBe(true);
    expect((await fetch(link)).status).toBe(200);
    expect((await fetch(link.replace('/a/2/', '/a/1/'))).status).toBe(404);
    expect((await fetch(link.replace('/a/2/', '/'))).status).toBe(404);
  });

  it('registers 10,000 accounts without building any; each is served when asked', async () => {
    const { sim } = await simulator([{ token: 'sim-token-1' }]);
    for (let k = 2; k <= 10_000; k++) sim.addAccount({ token: `sim-token-${k}`, openTickets: 2, resolvedTickets: 3 });
    expect(sim.accounts()).toHaveLength(10_000);
    expect(sim.accounts().filter((a) => a.built)).toHaveLength(0);
    expect(await ids(await get(sim, 'sim-token-10000', '/api/v1/tickets'))).toHaveLength(2);
    expect(sim.accounts().filter((a) => a.built).map((a) => a.ordinal)).toEqual([10_000]);
    expect(() => sim.addAccount({ token: 'sim-token-7' })).toThrow(/has that token/);
    expect(() => sim.addAccount({ token: 'two words' })).toThrow(/visible ASCII/);
  });

  it('injects faults for one account only', async () => {
    const { sim } = await simulator([{ token: 'a' }, { token: 'b' }]);
    sim.account('a')!.faults.inject({ kind: 'status500', times: 2 });
    expect((await get(sim, 'b', '/api/v1/tickets')).status).toBe(200);
    expect((await get(sim, 'a', '/api/v1/tickets')).status).toBe(500);
    expect((await get(sim, 'b', '/api/v1/tickets/resolved')).status).toBe(200);
    expect((await get(sim, 'a', '/api/v1/tickets')).status).toBe(500);
    expect((await get(sim, 'a', '/api/v1/tickets')).status).toBe(200);
    expect(sim.account('b')!.log.map((e) => e.status)).toEqual([200, 200]);
    // A stranger meets no account's fault.
    sim.account('a')!.faults.inject({ kind: 'status503' });
    expect((await get(sim, 'x', '/api/v1/tickets')).status).toBe(401);
    expect(sim.account('a')!.faults.pending).toBe(1);
  });

  it('keeps the last entries of each log when given a logLimit', async () => {
    const { sim } = await simulator([{ token: 'a' }], { logLimit: 3 });
    for (let i = 0; i < 8; i++) await get(sim, 'a', `/api/v1/tickets?i=${i}`);
    const log = sim.account('a')!.log;
    expect(log.length).toBeGreaterThanOrEqual(3);
    expect(log.length).toBeLessThan(6);
    expect(log.at(-1)!.path).toBe('/api/v1/tickets?i=7');
    expect(log.map((e) => e.path)).toEqual(log.map((e, i) => `/api/v1/tickets?i=${8 - log.length + i}`));
  });

  it('refuses contradictory or bad options', async () => {
    await expect(startSimulator({ accounts: [{ token: 'a' }], token: 'b' })).rejects.toThrow(/token is for one account/);
    await expect(startSimulator({ accounts: [] })).rejects.toThrow(/at least one/);
    await expect(startSimulator({ accounts: [{ token: 'a' }, { token: 'a' }] })).rejects.toThrow(/same token/);
    await expect(startSimulator({ accounts: [{ token: 'a', minuteLimit: 0 }] })).rejects.toThrow(/minuteLimit/);
  });
});

describe('control routes per account', () => {
  const post = (sim: RunningSimulator, path: string, body: unknown, account?: string) =>
    fetch(`${sim.url}${path}`, {
      method: 'POST',
      headers: account ? { 'x-sim-account': account } : {},
      body: JSON.stringify(body),
    });

  it('select the account by x-sim-account (the first without it); add and list accounts', async () => {
    const { sim, clock } = await simulator([{ token: 'a' }, { token: 'b' }]);
    const created = (await (await post(sim, '/__sim/mutate', { op: 'newTicket', args: [{ name: 'Only B' }] }, 'b')).json()) as { id: string };
    expect(sim.account('b')!.model.hasTicket(created.id)).toBe(true);
    expect(sim.account('a')!.built).toBe(false);
    const truth = await fetch(`${sim.url}/__sim/truth`, { headers: { 'x-sim-account': 'b' } });
    expect(await truth.json()).toEqual(sim.account('b')!.model.groundTruth());
    expect((await post(sim, '/__sim/faults', { kind: 'status503' }, 'b')).status).toBe(204);
    expect([sim.account('a')!.faults.pending, sim.account('b')!.faults.pending]).toEqual([0, 1]);
    expect((await get(sim, 'b', '/api/v1/tickets')).status).toBe(503);
    expect(await (await fetch(`${sim.url}/__sim/log`, { headers: { 'x-sim-account': 'b' } })).json()).toEqual(sim.account('b')!.log);
    // Without the header: the first account.
    expect((await post(sim, '/__sim/mutate', { op: 'randomTicketId', args: [] })).status).toBe(200);
    expect(sim.account('a')!.built).toBe(true);
    expect((await post(sim, '/__sim/mutate', { op: 'randomTicketId', args: [] }, 'nope')).status).toBe(404);

    const added = await post(sim, '/__sim/accounts', { accounts: [{ token: 'c', seed: 9, minuteLimit: 5 }, { token: 'd' }] });
    expect(added.status).toBe(201);
    expect(await added.json()).toEqual([
      { ordinal: 3, seed: 9, openTickets: 6, resolvedTickets: 20, minuteLimit: 5, dailyLimit: 1440, built: false },
      { ordinal: 4, seed: 4, openTickets: 6, resolvedTickets: 20, minuteLimit: 60, dailyLimit: 1440, built: false },
    ]);
    expect((await get(sim, 'c', '/api/v1/tickets')).headers.get('x-ratelimit-limit')).toBe('5');
    // All or none: one bad account adds nothing; no token ever comes back.
    expect((await post(sim, '/__sim/accounts', { accounts: [{ token: 'e' }, { token: 'a' }] })).status).toBe(400);
    expect((await post(sim, '/__sim/accounts', { token: 'f', seed: '1' })).status).toBe(400);
    expect((await post(sim, '/__sim/accounts', { token: 'g', extra: 1 })).status).toBe(400);
    const listed = await (await fetch(`${sim.url}/__sim/accounts`)).text();
    expect(JSON.parse(listed).map((a: { ordinal: number }) => a.ordinal)).toEqual([1, 2, 3, 4]);
    expect(listed).not.toMatch(/"token"|"a"|"b"/);
    // The clock is everyone's.
    expect(await (await post(sim, '/__sim/clock', { advanceMs: 1000 }, 'b')).json()).toEqual({ now: clock.now() });
  });
});

describe('activity in every account', () => {
  it('drives all accounts, those added later included, or a chosen subset', async () => {
    const { sim, clock } = await simulator([{ token: 'a' }, { token: 'b' }]);
    const all = createFleetActivityDriver({ seed: 3, accounts: () => sim.accounts() });
    const from = clock.now();
    sim.addAccount({ token: 'c' });
    clock.advance(8 * HOUR_MS);
    const applied = all.step(from, clock.now());
    expect(new Set(applied.map((m) => m.account))).toEqual(new Set([1, 2, 3]));
    // Each new ticket is in its own account (unless the activity deleted it since), and in no other.
    for (const m of applied.filter((x) => x.op === 'newTicket')) {
      const deleted = applied.some((x) => x.account === m.account && x.op === 'deleteTicket' && x.ticketId === m.ticketId);
      const holders = sim.accounts().filter((a) => a.model.hasTicket(m.ticketId)).map((a) => a.ordinal);
      expect(holders).toEqual(deleted ? [] : [m.account]);
    }
    // Seen through the API: account b's lists show its own new tickets.
    const newInB = applied.filter((m) => m.account === 2 && m.op === 'newTicket' && sim.account('b')!.model.hasTicket(m.ticketId));
    expect(newInB.length).toBeGreaterThan(0);
    const listed = [...(await ids(await get(sim, 'b', '/api/v1/tickets'))), ...(await ids(await get(sim, 'b', '/api/v1/tickets/resolved')))];
    expect(listed).toEqual(expect.arrayContaining(newInB.map((m) => m.ticketId)));

    const subset = createFleetActivityDriver({ seed: 3, accounts: () => [sim.account('c')!] });
    const later = clock.now();
    clock.advance(8 * HOUR_MS);
    expect(new Set(subset.step(later, clock.now()).map((m) => m.account))).toEqual(new Set([3]));
  });
});
