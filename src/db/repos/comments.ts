import { columnComment, FUNCTIONS, relationComment, RELATIONS, type FunctionDoc, type RelationDoc } from '../comments.ts';
import { queryRows, quoteIdent, sql, type Tx } from '../connect.ts';
import { textColumn } from './rows.ts';

/** The dollar-quote tag of the one DO block that writes the comments. */
const DO_TAG = '$tm_comments$';

/**
 * Makes the comments of the schema's tables, views, columns and functions say what db/comments.ts says. Run by every
 * migrate after the migrations, so a column added by a migration gets its comment from the same source, and an edit of
 * a text reaches every database without a migration of its own. Only the comments that differ are written: on a
 * current database this is one query.
 *
 * Returns what db/comments.ts documents that the database does not have (a test asserts that nothing is).
 * `docs`: another schema's texts (the fleet's control schema: db/fleetComments.ts), applied the same way.
 */
export async function applyComments(
  tx: Tx,
  docs: { relations: Readonly<Record<string, RelationDoc>>; functions: readonly FunctionDoc[] } = { relations: RELATIONS, functions: FUNCTIONS },
): Promise<{ written: number; missing: string[] }> {
  const { relations: RELATION_DOCS, functions: FUNCTION_DOCS } = docs;
  const relations = await queryRows<{ relation: string; column: string | null; kind: string; comment: string | null }>(
    tx,
    sql`select c.relname as relation, null::text as column, c.relkind::text as kind, obj_description(c.oid, 'pg_class') as comment
        from pg_class c where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'v', 'p', 'm')
        union all
        select c.relname, a.attname::text, c.relkind::text, col_description(c.oid, a.attnum)
        from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'v', 'p', 'm')`,
  );
  const current = new Map(relations.map((r) => [r.column === null ? r.relation : `${r.relation}.${r.column}`, r]));
  const functions = await queryRows<{ signature: string; comment: string | null }>(
    tx,
    sql`select f.signature, obj_description(to_regprocedure(f.signature), 'pg_proc') as comment
        from unnest(${textColumn(FUNCTION_DOCS, (f) => f.signature)}) as f(signature)
        where to_regprocedure(f.signature) is not null`,
  );
  const currentFunctions = new Map(functions.map((f) => [f.signature, f.comment]));

  const statements: string[] = [];
  const missing: string[] = [];
  for (const [name, doc] of Object.entries(RELATION_DOCS)) {
    const existing = current.get(name);
    if (!existing) {
      missing.push(name);
      continue;
    }
    const kind = existing.kind === 'v' || existing.kind === 'm' ? (existing.kind === 'v' ? 'VIEW' : 'MATERIALIZED VIEW') : 'TABLE';
    const text = relationComment(doc);
    if (existing.comment !== text) statements.push(`COMMENT ON ${kind} ${quoteIdent(name)} IS ${quoteLiteral(text)}`);
    for (const [column, columnDoc] of Object.entries(doc.columns)) {
      const col = current.get(`${name}.${column}`);
      if (!col) {
        missing.push(`${name}.${column}`);
        continue;
      }
      const columnText = columnComment(columnDoc);
      if (col.comment !== columnText) {
        statements.push(`COMMENT ON COLUMN ${quoteIdent(name)}.${quoteIdent(column)} IS ${quoteLiteral(columnText)}`);
      }
    }
  }
  for (const f of FUNCTION_DOCS) {
    if (!currentFunctions.has(f.signature)) {
      missing.push(f.signature);
      continue;
    }
    if (currentFunctions.get(f.signature) !== f.about) statements.push(`COMMENT ON FUNCTION ${f.signature} IS ${quoteLiteral(f.about)}`);
  }
  // One statement, one round trip: a fresh schema has some 260 comments to write (a second per schema otherwise, which
  // a fleet of a thousand accounts pays at provisioning). Our own texts, never outside input: the quote tag is safe.
  if (statements.length > 0) {
    const block = statements.map((statement) => `${statement};`).join('\n');
    if (block.includes(DO_TAG)) throw new Error(`a comment contains ${DO_TAG}`);
    await tx.execute(sql.raw(`DO ${DO_TAG} BEGIN\n${block}\nEND ${DO_TAG}`));
  }
  return { written: statements.length, missing };
}

/**
 * A string literal for COMMENT ON, which takes no parameters. The texts are the code's own; a backslash is refused so
 * that the literal means the same whatever standard_conforming_strings says.
 */
function quoteLiteral(text: string): string {
  if (/[\\\0]/.test(text)) throw new Error(`a comment in db/comments.ts holds a backslash or NUL: ${text.slice(0, 60)}`);
  return `'${text.replaceAll("'", "''")}'`;
}
