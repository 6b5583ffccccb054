import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { columnComment, FUNCTIONS, relationComment, RELATIONS } from '../../src/db/comments.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { readCatalog } from '../../src/db/repos/catalog.ts';
import { applyComments } from '../../src/db/repos/comments.ts';
import { renderSchemaPage } from '../../src/db/schemaPage.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';

/**
 * The schema explains itself: every table, column and view of a migrated database carries the comment of
 * src/db/comments.ts (migrate applies them), nothing documented is missing from the database, and docs/schema.md is
 * what `npm run docs:schema` makes of it.
 */

const PAGE = new URL('../../docs/schema.md', import.meta.url);

describe.each(backends)('schema comments and docs/schema.md on $name', ({ open }) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await open();
  });
  afterAll(() => database.destroy());

  it('every table, view and column has the comment of src/db/comments.ts', async () => {
    const catalog = await readCatalog(database.db);
    const undocumented = catalog.relations.flatMap((r) => [
      ...(RELATIONS[r.name] ? [] : [r.name]),
      ...r.columns.filter((c) => RELATIONS[r.name]?.columns[c.name] === undefined).map((c) => `${r.name}.${c.name}`),
    ]);
    // Add each of these to src/db/comments.ts: what it means, its unit, its time zone.
    expect(undocumented).toEqual([]);
    const wrong = catalog.relations.flatMap((r) => {
      const doc = RELATIONS[r.name]!;
      return [
        ...(r.comment === relationComment(doc) ? [] : [r.name]),
        ...r.columns.filter((c) => c.comment !== columnComment(doc.columns[c.name]!)).map((c) => `${r.name}.${c.name}`),
      ];
    });
    expect(wrong).toEqual([]);
    expect(catalog.relations.length).toBe(Object.keys(RELATIONS).length);
  });

  it('every function has its comment, and nothing documented is missing from the database', async () => {
    const catalog = await readCatalog(database.db);
    expect(catalog.functions.filter((f) => f.comment === null).map((f) => f.signature)).toEqual([]);
    expect(catalog.functions.map((f) => f.comment).sort()).toEqual(FUNCTIONS.map((f) => f.about).sort());
    const again = await database.db.transaction((tx) => applyComments(tx));
    expect(again).toEqual({ written: 0, missing: [] });
  });

  it('migrate puts back a comment that was changed or dropped', async () => {
    await database.db.execute(sql`comment on column tickets.status is null`);
    await database.db.execute(sql`comment on view agents is 'my own words'`);
    await database.migrate();
    const [row] = await queryRows<{ status: string | null; agents: string | null }>(
      database.db,
      sql`select col_description('tickets'::regclass, (select attnum from pg_attribute where attrelid = 'tickets'::regclass and attname = 'status')) as status,
                 obj_description('agents'::regclass, 'pg_class') as agents`,
    );
    expect(row).toEqual({ status: columnComment(RELATIONS.tickets!.columns.status!), agents: relationComment(RELATIONS.agents!) });
  });

  it('docs/schema.md is up to date (npm run docs:schema writes it)', async () => {
    const page = renderSchemaPage(await readCatalog(database.db));
    expect(readFileSync(PAGE, 'utf8')).toBe(page);
    expect(page).not.toMatch(/undocumented/i);
  });
});
