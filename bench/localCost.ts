import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runScript } from './children.ts';
import type { CostResult } from './localCostWorker.ts';

/**
 * Local cost as the data grows: one list response of growing size, and one large detail, processed on each backend,
 * one measurement per child process (sequential: wall times must not compete with each other).
 */

export interface LocalCostPlan {
  /** List sizes measured on PostgreSQL and on PGlite. */
  listSizes: { pg: number[]; pglite: number[] };
  detailMessages: number;
  /** Backends the detail is measured on. */
  detailOn: Array<'pg' | 'pglite'>;
  runs: number;
}

export const FULL_COST: LocalCostPlan = {
  listSizes: { pg: [1_000, 10_000, 100_000], pglite: [1_000, 10_000, 100_000] },
  detailMessages: 200,
  detailOn: ['pg', 'pglite'],
  runs: 5,
};
export const QUICK_COST: LocalCostPlan = {
  listSizes: { pg: [1_000, 10_000], pglite: [1_000] },
  detailMessages: 200,
  detailOn: ['pg'],
  runs: 3,
};

export async function measureLocalCost(plan: LocalCostPlan, postgresUrl: string | null): Promise<CostResult[]> {
  const backends: Array<'pg' | 'pglite'> = postgresUrl ? ['pg', 'pglite'] : ['pglite'];
  const jobs: Array<{ backend: 'pg' | 'pglite'; kind: 'list' | 'detail'; size: number }> = [];
  for (const backend of backends) {
    for (const size of plan.listSizes[backend]) jobs.push({ backend, kind: 'list', size });
    if (plan.detailOn.includes(backend)) jobs.push({ backend, kind: 'detail', size: plan.detailMessages });
  }
  const results: CostResult[] = [];
  for (const job of jobs) {
    const dir = mkdtempSync(join(tmpdir(), `tm-cost-${job.kind}-${job.size}-`));
    try {
      const out = join(dir, 'result.json');
      const label = `${job.backend} ${job.kind} ${job.size}`;
      await runScript('localCostWorker.ts', ['prepare', job.kind, String(job.size), String(plan.runs), dir], `${label} (bodies)`);
      const args = ['measure', job.backend, job.kind, String(job.size), String(plan.runs), dir, out, ...(job.backend === 'pg' ? [postgresUrl!] : [])];
      await runScript('localCostWorker.ts', args, label);
      results.push(JSON.parse(readFileSync(out, 'utf8')) as CostResult);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return results;
}
