import { writeFileSync } from 'node:fs';
import { STRATEGIES, type StrategyName } from './strategies/index.ts';
import { runVirtual } from './virtualRun.ts';
import { workloadNamed } from './workload.ts';

/**
 * One strategy's virtual run in a process of its own, so that runs can use both cores:
 * `tsx bench/virtualWorker.ts <workload> <strategy> <out.json> [--quick] [--correlated] [--pg <url>] [--every-tick]`.
 * Without `--pg` the run uses PGlite. Progress goes to stderr.
 */

const [workloadName, strategy, out, ...flags] = process.argv.slice(2);
const workload = { ...workloadNamed(workloadName ?? '', flags.includes('--quick')), correlated: flags.includes('--correlated') };
const make = STRATEGIES[strategy as StrategyName];
if (!make || !out) {
  process.stderr.write('usage: virtualWorker.ts <workload> <strategy> <out.json> [--quick] [--correlated] [--pg <url>] [--every-tick]\n');
  process.exit(2);
}
const pg = flags.indexOf('--pg');
const run = await runVirtual(workload, strategy as StrategyName, make, {
  postgresUrl: pg >= 0 ? (flags[pg + 1] ?? null) : null,
  everyTick: flags.includes('--every-tick'),
  progress: (line) => process.stderr.write(`${line}\n`),
});
writeFileSync(out, JSON.stringify(run));
