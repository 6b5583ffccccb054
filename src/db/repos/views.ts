import { safeErrorMessage } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { queryRows, sql, type Tx } from '../connect.ts';

/** A view as the migrations define it: its name and the statement that last (re)created it. */
export interface ViewDefinition {
  name: string;
  statement: string;
}

const VIEW_STATEMENT = /^\s*(?:--[^\n]*\n\s*)*(create(?:\s+or\s+replace)?\s+view|drop\s+view(?:\s+if\s+exists)?)\s+"?([a-z_][a-z0-9_]*)"?/i;

/**
 * The views the migrations leave, each with the statement that last created it, in the order of those statements; a
 * view a later migration drops is not among them. `statements`: the migrations' statements, oldest first.
 */
export function viewDefinitions(statements: readonly string[]): ViewDefinition[] {
  const last = new Map<string, { statement: string; at: number } | null>();
  statements.forEach((statement, at) => {
    const match = VIEW_STATEMENT.exec(statement);
    if (!match) return;
    const name = match[2]!.toLowerCase();
    last.delete(name);
    last.set(name, /^drop/i.test(match[1]!) ? null : { statement, at });
  });
  return [...last.entries()]
    .filter((e): e is [string, { statement: string; at: number }] => e[1] !== null)
    .sort((a, b) => a[1].at - b[1].at)
    .map(([name, { statement }]) => ({ name, statement }));
}

/** What restoreViews did: the views it made again, and those it could not (with the database's reason). */
export interface ViewsRestored {
  restored: string[];
  notRestored: Array<{ name: string; reason: string }>;
}

/**
 * Creates again, in the current schema, the views of `views` that are missing: a user dropped one (with CASCADE, the
 * views built on it too), and every dashboard on it broke until someone found the migration that made it. Each is
 * created by its own migration statement, in a savepoint; one that needs another missing view waits for it (rounds
 * until none is left or none more can be made). A view that exists is left as it is, even one a user replaced. One
 * that cannot be made (a user dropped the function or column it reads) is reported, never thrown: a BI view must not
 * keep the mirror from starting.
 */
export async function restoreViews(tx: Tx, views: readonly ViewDefinition[]): Promise<ViewsRestored> {
  let missing = await missingViews(tx, views);
  const restored: string[] = [];
  for (;;) {
    const failed: Array<{ view: ViewDefinition; error: unknown }> = [];
    for (const view of missing) {
      try {
        await tx.transaction(async (savepoint) => {
          await savepoint.execute(sql.raw(view.statement));
        });
        restored.push(view.name);
      } catch (error) {
        failed.push({ view, error });
      }
    }
    if (failed.length === 0 || failed.length === missing.length) {
      return { restored, notRestored: failed.map((f) => ({ name: f.view.name, reason: safeErrorMessage(f.error) })) };
    }
    missing = failed.map((f) => f.view);
  }
}

/** The views of `views` that no relation of the current schema is named after: one catalog query. */
export async function missingViews(tx: Tx, views: readonly ViewDefinition[]): Promise<ViewDefinition[]> {
  const present = new Set(
    (await queryRows<{ name: string }>(tx, sql`select c.relname as name from pg_class c where c.relnamespace = current_schema()::regnamespace`)).map((r) => r.name),
  );
  return views.filter((v) => !present.has(v.name));
}

/**
 * Tells what a migrate did to the BI views: those it made again, and those it could not (a warning each). Every caller
 * of `Database.migrate` passes its report here, so that no view is made again, or left broken, without a line.
 */
export function logViewsRestored(logger: Logger, { restored, notRestored }: ViewsRestored): void {
  if (restored.length > 0) logger.info({ views: restored }, 'BI views that were dropped are made again');
  for (const { name, reason } of notRestored) {
    logger.warn({ view: name, reason }, 'a BI view that was dropped could not be made again (what it reads is gone too?): dashboards on it stay broken');
  }
}
