import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql, type Db } from '../../src/db/connect.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';

/**
 * The BI views are the mirror's, and dashboards stand on them. A user who dropped one (with CASCADE, the views on it
 * too) broke those dashboards for good: migrate found no migration pending and left them gone. Every migrate — every
 * start of `run` — now makes a missing view again from the migration that last defined it: the same definition, the
 * same comments. A view a user replaced is theirs: left as it is.
 */

interface ViewRow {
  name: string;
  definition: string;
  comment: string | null;
}

function views(db: Db): Promise<ViewRow[]> {
  return queryRows<ViewRow>(
    db,
    sql`select c.relname as name, pg_get_viewdef(c.oid) as definition, obj_description(c.oid, 'pg_class') as comment
        from pg_class c where c.relkind = 'v' and c.relnamespace = current_schema()::regnamespace order by 1`,
  );
}

describe.each(backends)('BI views a user dropped ($name)', ({ open }) => {
  let database: TestDatabase;

  beforeEach(async () => {
    database = await open();
  });

  afterEach(async () => {
    await database.destroy();
  });

  it('are made again by the next migrate, as the migrations left them, comments included', async () => {
    const shipped = await views(database.db);
    expect(shipped.length).toBeGreaterThanOrEqual(13);
    await database.db.execute(sql`drop view ticket_sla cascade`);
    await database.db.execute(sql`drop view open_backlog_daily`);
    await database.db.execute(sql`drop view agents cascade`);
    const names = (await views(database.db)).map((v) => v.name);
    expect(names).not.toContain('ticket_sla');
    expect(names).not.toContain('sla_breaches'); // built on ticket_sla: gone with it
    expect(names).not.toContain('agents');
    const report = await database.migrate();
    expect(report.restored.sort()).toEqual(['agents', 'open_backlog_daily', 'sla_breaches', 'ticket_sla']);
    expect(report.notRestored).toEqual([]);
    expect(await views(database.db)).toEqual(shipped);
    // And they answer.
    for (const { name } of shipped) await database.db.execute(sql.raw(`select * from ${name} limit 1`));
  });

  it('leave a view the user replaced as it is, and make nothing when none is missing', async () => {
    await database.db.execute(sql`drop view open_by_widget`);
    await database.db.execute(sql`create view open_by_widget as select 'mine'::text as widget_name`);
    const before = await views(database.db);
    expect(before.find((v) => v.name === 'open_by_widget')?.definition).toMatch(/'mine'/);
    expect(await database.migrate()).toEqual({ restored: [], notRestored: [] });
    // Its comment is the mirror's again (comments are rewritten by every migrate), its definition the user's.
    expect((await views(database.db)).map(({ name, definition }) => ({ name, definition }))).toEqual(before.map(({ name, definition }) => ({ name, definition })));
  });

  it('report a view that cannot be made again (what it reads is gone too), and start all the same', async () => {
    const shipped = await views(database.db);
    // A user drops the function the SLA and response-time views compute with, and the views with it.
    await database.db.execute(sql`drop function business_seconds(timestamptz, timestamptz, text, jsonb) cascade`);
    await database.db.execute(sql`drop function business_seconds(timestamptz, timestamptz) cascade`);
    const left = new Set((await views(database.db)).map((v) => v.name));
    const gone = shipped.map((v) => v.name).filter((name) => !left.has(name));
    expect(gone.length).toBeGreaterThan(0);
    const report = await database.migrate();
    expect(report.restored).toEqual([]);
    expect(report.notRestored.map((v) => v.name).sort()).toEqual(gone.sort());
    for (const { reason } of report.notRestored) expect(reason).toMatch(/does not exist \(SQLSTATE (42883|42P01)\)/);
    // The views it did not need stand as they were.
    expect((await views(database.db)).map((v) => v.name).sort()).toEqual([...left].sort());
  });
});
