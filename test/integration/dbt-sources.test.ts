import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { queryRows, quoteIdent, sql } from '../../src/db/connect.ts';
import { readCatalog, type Catalog } from '../../src/db/repos/catalog.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * dbt/sources.yml against a migrated database and a mirror of the simulator, on both backends: every table and column
 * it declares exists, a table's unique / not_null key is one in the database, every loaded_at_field is a timestamptz,
 * and every data test it declares — run here as the SQL dbt would run — passes on the mirror, as do its freshness
 * checks right after a sync.
 */

type DataTest = string | Record<string, { to?: string; field?: string; values?: string[] }>;
interface SourceColumn {
  name: string;
  data_tests?: DataTest[];
}
interface SourceTable {
  name: string;
  loaded_at_field?: string;
  freshness?: { warn_after?: { count: number; period: string }; error_after?: { count: number; period: string } } | null;
  columns: SourceColumn[];
}

const yaml = parse(readFileSync(new URL('../../dbt/sources.yml', import.meta.url), 'utf8')) as {
  version: number;
  sources: Array<{ name: string; schema: string; tables: SourceTable[] }>;
};
const source = yaml.sources[0]!;
const PERIOD_MS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** The failing rows of one dbt data test, as dbt's generic tests count them. */
function failures(table: string, column: string, test: DataTest): ReturnType<typeof sql> {
  const t = sql.raw(quoteIdent(table));
  const c = sql.raw(quoteIdent(column));
  if (test === 'unique') return sql`select count(*)::int as n from (select ${c} from ${t} where ${c} is not null group by ${c} having count(*) > 1) as d`;
  if (test === 'not_null') return sql`select count(*)::int as n from ${t} where ${c} is null`;
  const [name, args] = Object.entries(test)[0]!;
  if (name === 'relationships') {
    const to = /^source\('ticket_mirror', '(\w+)'\)$/.exec(args.to!)![1]!;
    return sql`select count(*)::int as n from ${t} child
               where child.${c} is not null
                 and not exists (select 1 from ${sql.raw(quoteIdent(to))} parent where parent.${sql.raw(quoteIdent(args.field!))} = child.${c})`;
  }
  if (name === 'accepted_values') {
    return sql`select count(*)::int as n from ${t} where ${c} is not null and ${c}::text <> all(${`{${args.values!.join(',')}}`}::text[])`;
  }
  throw new Error(`dbt/sources.yml: a test this file does not know how to run: ${name}`);
}

describe('dbt/sources.yml', () => {
  it('is one dbt source over the DB_SCHEMA schema (var ticket_mirror_schema, default public)', () => {
    expect(yaml.version).toBe(2);
    expect(yaml.sources).toHaveLength(1);
    expect(source.name).toBe('ticket_mirror');
    expect(source.schema).toBe("{{ var('ticket_mirror_schema', 'public') }}");
    for (const table of source.tables) {
      if (!table.freshness) continue;
      expect(table.loaded_at_field, table.name).toBeDefined();
      for (const rule of [table.freshness.warn_after, table.freshness.error_after]) if (rule) expect(Object.keys(PERIOD_MS)).toContain(rule.period);
    }
  });
});

describe.each(backends)('dbt/sources.yml on $name', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  let catalog: Catalog;
  beforeAll(async () => {
    database = await open();
    catalog = await readCatalog(database.db);
    m = await virtualMirror(database);
    const backlog = () => count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null and deleted_at is null`);
    await m.runUntil(async () => (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 && (await backlog()) === 0);
  });
  afterAll(async () => {
    await m.close();
    await database.destroy();
  });

  it('declares only tables and columns the database has; a table\'s declared keys are keys there', () => {
    const missing: string[] = [];
    const unbacked: string[] = [];
    for (const table of source.tables) {
      const relation = catalog.relations.find((r) => r.name === table.name);
      if (!relation) {
        missing.push(table.name);
        continue;
      }
      for (const column of table.columns) {
        const c = relation.columns.find((col) => col.name === column.name);
        if (!c) missing.push(`${table.name}.${column.name}`);
        if (!c || relation.kind !== 'table') continue;
        const tests = column.data_tests ?? [];
        if (tests.includes('not_null') && !c.notNull) unbacked.push(`${table.name}.${column.name} not_null`);
        // unique: the primary key (of this one column) says so.
        if (tests.includes('unique') && relation.primaryKey.join() !== column.name) unbacked.push(`${table.name}.${column.name} unique`);
      }
      if (table.loaded_at_field) {
        const c = relation.columns.find((col) => col.name === table.loaded_at_field);
        if (!c?.type.endsWith('with time zone')) unbacked.push(`${table.name}.${table.loaded_at_field} is not a timestamptz`);
      }
    }
    expect(missing).toEqual([]);
    expect(unbacked).toEqual([]);
    // The contract's tables are all there.
    expect(source.tables.map((t) => t.name)).toEqual(
      expect.arrayContaining(['tickets', 'messages', 'attachments', 'ticket_history', 'reply_outbox', 'api_requests', 'sync_runs']),
    );
  });

  it('every data test passes on a mirror of the simulator', async () => {
    const failed: string[] = [];
    let run = 0;
    for (const table of source.tables) {
      for (const column of table.columns) {
        for (const test of column.data_tests ?? []) {
          const [row] = await queryRows<{ n: number }>(m.db, failures(table.name, column.name, test));
          run++;
          if (row!.n !== 0) failed.push(`${table.name}.${column.name} ${JSON.stringify(test)}: ${row!.n} rows`);
        }
      }
    }
    expect(failed).toEqual([]);
    expect(run).toBeGreaterThan(30);
    // Not vacuous: the mirror has rows in the tables the tests look at.
    const [rows] = await queryRows<Record<string, number>>(
      m.db,
      sql`select (select count(*) from messages)::int as messages, (select count(*) from attachments)::int as attachments,
                 (select count(*) from agents)::int as agents, (select count(*) from ticket_resolution)::int as resolved`,
    );
    for (const [name, n] of Object.entries(rows!)) expect(n, name).toBeGreaterThan(0);
  });

  it('the freshness checks pass right after a sync', async () => {
    const now = m.clock.now();
    for (const table of source.tables) {
      const rule = table.freshness?.warn_after;
      if (!rule) continue;
      const [row] = await queryRows<{ at: string | null }>(
        m.db,
        sql`select to_char(max(${sql.raw(quoteIdent(table.loaded_at_field!))}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
            from ${sql.raw(quoteIdent(table.name))}`,
      );
      expect(row!.at, table.name).not.toBeNull();
      const age = now - Date.parse(row!.at!);
      expect(age, `${table.name}.${table.loaded_at_field} is ${age} ms old`).toBeLessThan(rule.count * PERIOD_MS[rule.period]!);
    }
  });
});
