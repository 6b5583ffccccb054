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
      await vi.waitFor(() => expect(lines.join('')).toMatch(/api http/));
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
