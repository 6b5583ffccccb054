import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { runSimulatorCommand } from '../../src/simulator/cli.ts';

describe('runSimulatorCommand', () => {
  it('prints where it serves, serves, and stops when told', async () => {
    const lines: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    const stop = new AbortController();
    try {
      const running = runSimulatorCommand({ port: 0, seed: 2, signal: stop.signal });
      await vi.waitFor(() => expect(lines.join('')).toMatch(/api http/), { timeout: 20_000, interval: 50 });
      const [, url, storage, token] = /api (\S+)\s+storage (\S+)\s+token (\S+)/.exec(lines.join(''))!;
      expect(storage).not.toBe(url);
      const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
      const res = await fetch(`${url}/api/v1/tickets`, { headers });
      expect(res.status).toBe(200);
      stop.abort();
      await running;
      await expect(fetch(`${url}/api/v1/tickets`)).rejects.toThrow();
    } finally {
      write.mockRestore();
    }
  });
});

describe('ticket-mirror simulator --accounts N (a real child process)', () => {
  it('serves sim-token-1 … sim-token-N, each its own data, admin routes per account, until SIGTERM', async () => {
    const bin = resolve(import.meta.dirname, '../../bin/ticket-mirror.js');
    const child = spawn(process.execPath, [bin, 'simulator', '--accounts', '3', '--seed', '5', '--port', '0'], {
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    try {
      await vi.waitFor(() => expect(out).toMatch(/accounts 3/), { timeout: 20_000, interval: 50 });
      expect(out).toMatch(/token sim-token-1 {2}accounts 3 \(tokens sim-token-1 … sim-token-3\)/);
      const [, url] = /api (\S+)/.exec(out)!;
      const open = async (token: string) => {
        const res = await fetch(`${url}/api/v1/tickets`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
        expect(res.status).toBe(200);
        return ((await res.json()) as { id: string }[]).map((t) => t.id);
      };
      const [one, three] = [await open('sim-token-1'), await open('sim-token-3')];
      expect(one.filter((id) => three.includes(id))).toEqual([]);
      expect((await fetch(`${url}/api/v1/tickets`, { headers: { authorization: 'Bearer sim-token', accept: 'application/json' } })).status).toBe(401);
      const truth = await fetch(`${url}/__sim/truth`, { headers: { 'x-sim-account': 'sim-token-3' } });
      expect(((await truth.json()) as { id: string }[]).map((t) => t.id)).toEqual(expect.arrayContaining(three));
      const accounts = (await (await fetch(`${url}/__sim/accounts`)).json()) as { ordinal: number; seed: number; built: boolean }[];
      expect(accounts.map((a) => [a.ordinal, a.seed, a.built])).toEqual([[1, 5, true], [2, 6, false], [3, 7, true]]);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
