#!/usr/bin/env node
// `npm test`: the whole vitest suite, then the plain closing line `N passed, N failed, N skipped` that CI reads
// (vitest's own summary is not one it knows). Extra arguments go to vitest, e.g. `npm test -- test/unit`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'tm-vitest-'));
const report = join(dir, 'report.json');
const run = spawnSync(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
let summary = null;
try {
  summary = JSON.parse(readFileSync(report, 'utf8'));
} catch {
  // No report: vitest failed before running anything; its exit code says so.
}
rmSync(dir, { recursive: true, force: true });
if (summary) {
  const skipped = summary.numPendingTests + summary.numTodoTests;
  console.log(`\n${summary.numPassedTests} passed, ${summary.numFailedTests} failed, ${skipped} skipped`);
}
process.exit(run.status ?? 1);
