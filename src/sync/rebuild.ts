import { isObject } from '../api/client.ts';
import { MAX_JSON_DEPTH } from '../api/listBody.ts';
import type { Db } from '../db/connect.ts';
import { rederiveDetail, storedDetails } from '../db/repos/details.ts';
import { mapDetail, UnstorableError } from './mapping.ts';

export interface RebuildResult {
  tickets: number;
  failed: Array<{ id: string; error: string }>;
}

/**
 * Re-derives tickets, messages and attachments from `tickets.raw`, without a single request: after a change to the
 * mapping, the tables catch up from what was already fetched. Batches of 200 tickets, one transaction each.
 */
export async function rebuildFromRaw(db: Db, onProgress?: (done: number) => void): Promise<RebuildResult> {
  const result: RebuildResult = { tickets: 0, failed: [] };
  let after = '';
  for (;;) {
    const batch = await storedDetails(db, after, 200);
    if (batch.length === 0) return result;
    await db.transaction(async (tx) => {
      for (const row of batch) {
        try {
          if (row.too_deep) throw new UnstorableError(`raw nests deeper than ${MAX_JSON_DEPTH} levels, which no answer of the API does`);
          if (!isObject(row.raw)) throw new UnstorableError('raw is not an object');
          await rederiveDetail(tx, mapDetail(row.raw, row.id), row.detail_synced_at);
          result.tickets++;
        } catch (error) {
          if (!(error instanceof UnstorableError)) throw error;
          result.failed.push({ id: row.id, error: error.message });
        }
      }
    });
    after = batch.at(-1)!.id;
    onProgress?.(result.tickets);
  }
}
