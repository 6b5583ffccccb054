import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/runProcess.ts';

/** The command line's own errors, from the real CLI in a child process: what it says, and exit 1. */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tm-cli-usage-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the command line', () => {
  it.each([
    // (`report` was the example; it is becoming a command of its own, so misspellings stand in for it.)
    [['stauts', '--help'], "error: unknown command 'stauts'\n(Did you mean status?)"],
    [['help', 'repyl'], "error: unknown command 'repyl'\n(Did you mean reply?)"],
    [['statu'], "error: unknown command 'statu'\n(Did you mean status?)"],
    [['status', '--jsno'], "error: unknown option '--jsno'\n(Did you mean --json?)"],
    [['sync', '--bogus'], "error: unknown option '--bogus'"],
  ])('%j is an error with the closest command or option suggested; exit 1', async (args, message) => {
    const r = await runCli(args, {}, dir);
    expect(r.code).toBe(1);
    expect(r.stderr.startsWith(message)).toBe(true);
    expect(r.stdout).toBe('');
    expect(r.stderr).not.toContain('Usage:');
  });

  it('no command prints the help on stderr and exits 1', async () => {
    const r = await runCli([], {}, dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Usage: ticket-mirror');
  });

  it('--help still prints the help and exits 0', async () => {
    const r = await runCli(['--help'], {}, dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: ticket-mirror');
  });
});
