import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freePort, get, startRun, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

/**
 * SIGTERM in the middle of a pass: every API answer is held back 20 s (a `slow` fault), so a request is in flight
 * when the signal comes. `run` must exit 0 within 10 s all the same, and a second signal must end it at once.
 */
describe('run stops on a signal', { timeout: 180_000 }, () => {
  let sim: RunningSimulator;
  let run: RunProcess | undefined;

  beforeEach(async () => {
    sim = await startSimulator({ seed: 21, openTickets: 4, resolvedTickets: 4 });
    sim.faults.inject({ kind: 'slow', delayMs: 20_000, times: 1_000 });
  });
  afterEach(async () => {
    await run?.dispose();
    sim.faults.clear();
    await sim.close();
  });

  const startMidPass = async () => {
    run = startRun({ TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_PORT: '0', HTTP_PORT: String(await freePort()), LOG_LEVEL: 'info' });
    await waitUntil('a request is in flight', () => sim.log.some((request) => request.status === 0), 90_000, run);
    // Alive and mid-pass: the first pass has not finished.
    expect((await get(`${run.httpUrl}/readyz`))?.status).toBe(503);
    return run;
  };

  it('exits 0 within 10 s of SIGTERM, mid-pass', async ({ annotate }) => {
    const r = await startMidPass();
    const sent = performance.now();
    r.child.kill('SIGTERM');
    const { code } = await r.exited;
    const tookMs = performance.now() - sent;
    await annotate(`exited ${(tookMs / 1000).toFixed(1)} s after SIGTERM`);
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(10_000);
    expect(r.output()).toContain('"msg":"stopped"');
  }, 150_000);

  // The terminal it runs in closed (and `nohup` does not shield Node, which restores SIGHUP's default when it starts):
  // SIGHUP ended it at once, mid-pass, exit 129, like a kill -9.
  it('SIGHUP, its terminal gone, stops it as gracefully as SIGTERM: exit 0 within 10 s, mid-pass', async () => {
    const r = await startMidPass();
    const sent = performance.now();
    r.child.kill('SIGHUP');
    const { code, signal } = await r.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(performance.now() - sent).toBeLessThan(10_000);
    expect(r.output()).toContain('"signal":"SIGHUP","msg":"stopping: letting the current pass finish"');
    expect(r.output()).toContain('"msg":"stopped"');
  }, 150_000);

  // Log-rotation tools send SIGUSR1 or SIGUSR2; by default either ended the process at once, mid-pass (exit 138/140).
  it('SIGUSR1 and SIGUSR2 are logged and ignored: it runs on, and SIGTERM still stops it gracefully', async () => {
    const r = await startMidPass();
    r.child.kill('SIGUSR2');
    await waitUntil('SIGUSR2 is heard', () => r.output().includes('SIGUSR2 ignored'), 10_000, r);
    r.child.kill('SIGUSR1');
    await waitUntil('SIGUSR1 is heard', () => r.output().includes('SIGUSR1 ignored'), 10_000, r);
    expect(r.child.exitCode).toBeNull();
    expect(r.child.signalCode).toBeNull();
    expect((await get(`${r.httpUrl}/healthz`))?.status).toBe(200);
    r.child.kill('SIGTERM');
    const { code, signal } = await r.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(r.output()).toContain('"msg":"stopped"');
  }, 150_000);

  it('a second signal forces the exit without waiting for the pass', async () => {
    const r = await startMidPass();
    r.child.kill('SIGTERM');
    // Two signals sent back to back may reach the process as one, and the same signal again within a second is taken
    // for the first delivered twice (npm passes on the Ctrl-C that also reached the daemon): the second goes once the
    // first has been handled and the daemon says that another one now exits at once.
    await waitUntil('the first signal is handled', () => r.output().includes('stopping: letting the current pass finish'), 10_000, r);
    await waitUntil('a second signal exits at once', () => r.output().includes('another SIGTERM or SIGINT exits at once'), 10_000, r);
    r.child.kill('SIGTERM');
    const { code } = await r.exited;
    expect(code).toBe(128 + 15);
    expect(r.output()).toContain('second signal: exiting now');
    expect(r.output()).not.toContain('"msg":"stopped"');
  }, 150_000);
});
