import { queryRows, sql, type Tx } from '../connect.ts';

/**
 * The shape of the mirror's schema as the database has it (the current schema): what docs/schema.md is generated from,
 * together with the texts of db/comments.ts. Types as PostgreSQL writes them, so the page says what a client sees.
 */

export interface CatalogColumn {
  name: string;
  /** format_type(): `text`, `timestamp(6) with time zone`, `double precision` … */
  type: string;
  /** The bare type name (`timestamptz`, `int8`), for the diagram. */
  shortType: string;
  notNull: boolean;
  /** A stored generated column. */
  generated: boolean;
  comment: string | null;
}

export interface CatalogRelation {
  name: string;
  kind: 'table' | 'view';
  comment: string | null;
  primaryKey: string[];
  columns: CatalogColumn[];
}

export interface CatalogForeignKey {
  from: string;
  fromColumn: string;
  to: string;
  toColumn: string;
}

export interface CatalogFunction {
  /** `name(argument types)` as to_regprocedure reads it back. */
  signature: string;
  returns: string;
  comment: string | null;
}

export interface Catalog {
  relations: CatalogRelation[];
  foreignKeys: CatalogForeignKey[];
  functions: CatalogFunction[];
}

export async function readCatalog(tx: Tx): Promise<Catalog> {
  const columns = await queryRows<{
    relation: string;
    kind: string;
    relation_comment: string | null;
    name: string;
    type: string;
    short_type: string;
    not_null: boolean;
    generated: boolean;
    comment: string | null;
  }>(
    tx,
    sql`select c.relname::text as relation, c.relkind::text as kind, obj_description(c.oid, 'pg_class') as relation_comment,
          a.attname::text as name, format_type(a.atttypid, a.atttypmod) as type, t.typname::text as short_type,
          a.attnotnull as not_null, a.attgenerated <> '' as generated, col_description(c.oid, a.attnum) as comment
        from pg_class c
        join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        join pg_type t on t.oid = a.atttypid
        where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p', 'v')
        order by c.relname, a.attnum`,
  );
  const keys = await queryRows<{ relation: string; kind: string; columns: string[] | string; to_relation: string | null; to_columns: string[] | string | null }>(
    tx,
    sql`select c.relname::text as relation, k.contype::text as kind,
          array(select a.attname::text from unnest(k.conkey) with ordinality as u(n, i)
                join pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.n order by u.i) as columns,
          f.relname::text as to_relation,
          case when k.contype = 'f' then array(select a.attname::text from unnest(k.confkey) with ordinality as u(n, i)
                join pg_attribute a on a.attrelid = k.confrelid and a.attnum = u.n order by u.i) end as to_columns
        from pg_constraint k
        join pg_class c on c.oid = k.conrelid
        left join pg_class f on f.oid = k.confrelid
        where k.connamespace = current_schema()::regnamespace and k.contype in ('p', 'f')
        order by c.relname, k.conname`,
  );
  const functions = await queryRows<CatalogFunction>(
    tx,
    sql`select p.proname::text || '(' || coalesce((select string_agg(format_type(t, null), ', ' order by i)
              from unnest(p.proargtypes::oid[]) with ordinality as a(t, i)), '') || ')' as signature,
          pg_get_function_result(p.oid) as returns, obj_description(p.oid, 'pg_proc') as comment
        from pg_proc p
        where p.pronamespace = current_schema()::regnamespace and p.prokind = 'f'
          and p.prorettype <> 'trigger'::regtype
        order by 1`,
  );

  const relations = new Map<string, CatalogRelation>();
  for (const c of columns) {
    let r = relations.get(c.relation);
    if (!r) {
      r = { name: c.relation, kind: c.kind === 'v' ? 'view' : 'table', comment: c.relation_comment, primaryKey: [], columns: [] };
      relations.set(c.relation, r);
    }
    r.columns.push({ name: c.name, type: c.type, shortType: c.short_type, notNull: c.not_null, generated: c.generated, comment: c.comment });
  }
  const foreignKeys: CatalogForeignKey[] = [];
  for (const k of keys) {
    const from = textArray(k.columns);
    if (k.kind === 'p') relations.get(k.relation)!.primaryKey = from;
    else {
      const to = textArray(k.to_columns);
      from.forEach((column, i) => foreignKeys.push({ from: k.relation, fromColumn: column, to: k.to_relation!, toColumn: to[i]! }));
    }
  }
  return { relations: [...relations.values()], foreignKeys, functions };
}

/** A text[] as either driver gives it: node-postgres parses it, PGlite may hand over the literal `{a,b}`. */
function textArray(value: string[] | string | null): string[] {
  if (value === null) return [];
  if (Array.isArray(value)) return value;
  return value === '{}' ? [] : value.slice(1, -1).split(',').map((v) => v.replace(/^"|"$/g, ''));
}
