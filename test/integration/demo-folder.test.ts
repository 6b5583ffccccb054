import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DEMO_MARK } from '../../src/cli/commands/demo.ts';
import { freePort, get, runCli, startCommand, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

/**
 * `ticket-mirror demo` empties its folder (`demo` beside PGLITE_DIR) at each start, so that the mirror is seen filling
 * up. It used to do so whatever the folder held, and whoever held it.
 */
describe('the demo\'s folder', { timeout: 180_000 }, () => {
  const home = mkdtempSync(join(tmpdir(), 'tm-demo-'));
  let demo: RunProcess | undefined;
  afterEach(async () => {
    await demo?.dispose();
    demo = undefined;
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('a folder of the user\'s where the demo\'s would be is left as it is: exit 1, saying why', async () => {
    const mine = join(home, 'demo');
    mkdirSync(mine);
    writeFileSync(join(mine, 'notes.txt'), 'mine');
    const r = await runCli(['demo'], { PGLITE_DIR: join(home, 'mirror-data'), PGLITE_PORT: '0', HTTP_PORT: '0' }, home);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ticket-mirror: ${mine} is not a folder the demo made, and the demo empties its folder at each start: move it, or set PGLITE_DIR so that the demo's folder (\`demo\` beside it) is free\n`);
    expect(readFileSync(join(mine, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('a second demo leaves the running one\'s folder alone; the next start after it empties the folder again', async () => {
    const base = join(home, 'second');
    const env = async () => ({ PGLITE_DIR: join(base, 'pglite'), PGLITE_PORT: '0', HTTP_PORT: String(await freePort()), LOG_LEVEL: 'info' });
    const folder = join(base, 'demo');
    const first = startCommand(['demo'], await env());
    demo = first;
    await waitUntil('the first demo has its database', () => existsSync(join(folder, 'PG_VERSION')) && first.output().includes('ticket-mirror is running'), 90_000, first);

    const second = await runCli(['demo'], await env(), home);
    expect(second.code).toBe(1);
    expect(second.stderr).toBe(`ticket-mirror: another demo (pid ${first.pid}) is running in ${folder}: stop it first, or start this one with PGLITE_DIR elsewhere\n`);
    expect(existsSync(join(folder, 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(folder, DEMO_MARK))).toBe(true);
    expect((await get(`${first.httpUrl}/healthz`))?.status).toBe(200);

    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    writeFileSync(join(folder, 'left-by-the-last-demo'), '');
    const third = startCommand(['demo'], await env());
    demo = third;
    await waitUntil('the next demo has started afresh', () => third.output().includes('ticket-mirror is running'), 90_000, third);
    expect(existsSync(join(folder, 'left-by-the-last-demo'))).toBe(false);
    expect(existsSync(join(folder, DEMO_MARK))).toBe(true);
  });
});
