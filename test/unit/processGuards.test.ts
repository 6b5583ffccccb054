import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * The process-wide policy of main.ts, in a real Node process (the handlers are process-wide, so not in the test's
 * own): an unhandled rejection is logged and the process carries on; an uncaught exception is logged with its reason
 * and exits 1. Both lines go through the redacting logger.
 */

const execFileAsync = promisify(execFile);
const GUARDS = resolve(import.meta.dirname, '../../src/cli/processGuards.ts');
const LOGGER = resolve(import.meta.dirname, '../../src/logger.ts');

async function inChild(body: string, level = 'info'): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = `
    const { installProcessGuards } = await import(${JSON.stringify(GUARDS)});
    const { createLogger } = await import(${JSON.stringify(LOGGER)});
    installProcessGuards(createLogger(${JSON.stringify(level)}));
    ${body}`;
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: resolve(import.meta.dirname, '../..') });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const logLines = (stderr: string) =>
  stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message: string } });

describe('process guards', () => {
  it('log an unhandled rejection, redacted, and let the process carry on', async () => {
    const { code, stdout, stderr } = await inChild(`
      Promise.reject(new Error('lost promise, Authorization: Bearer sekrit-token'));
      // Two turns of the loop: the rejection is reported after the microtasks of the first.
      setImmediate(() => setImmediate(() => console.log('still running')));`);
    expect(code).toBe(0);
    expect(stdout).toBe('still running\n');
    const [line] = logLines(stderr);
    expect(line).toMatchObject({ level: 50, msg: 'unhandled promise rejection (a bug): logged, the process carries on' });
    expect(line!.err!.message).toBe('lost promise, Authorization: Bearer [redacted]');
    expect(stderr).not.toContain('sekrit-token');
  });

  it('log an uncaught exception with its reason, redacted, and exit 1', async () => {
    const { code, stdout, stderr } = await inChild(`
      setImmediate(() => { throw new Error('broken: password=hunter2'); });
      setImmediate(() => setImmediate(() => console.log('still running')));`);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    const [line] = logLines(stderr);
    expect(line).toMatchObject({ level: 60, msg: 'uncaught exception (a bug): exiting with code 1' });
    expect(line!.err!.message).toBe('broken: password=[redacted]');
    expect(stderr).not.toContain('hunter2');
  });

  it('still say why they exit when the log is silent', async () => {
    const { code, stderr } = await inChild(`setImmediate(() => { throw new Error('broken: password=hunter2'); });`, 'silent');
    expect(code).toBe(1);
    expect(stderr).toBe('ticket-mirror: uncaught exception, exiting: broken: password=[redacted]\n');
  });
});
