// Writes docs/schema.md from src/db/comments.ts and a freshly migrated embedded database (`npm run docs:schema`).
// test/integration/schema-docs.test.ts fails when the file is not what this writes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/db/connect.ts';
import { readCatalog } from '../src/db/repos/catalog.ts';
import { renderSchemaPage } from '../src/db/schemaPage.ts';

const dir = mkdtempSync(join(tmpdir(), 'tm-schema-docs-'));
try {
  const database = await openDatabase({ pgliteDir: dir });
  try {
    await database.migrate();
    const page = renderSchemaPage(await readCatalog(database.db));
    writeFileSync(new URL('../docs/schema.md', import.meta.url), page);
    console.log(`docs/schema.md written (${page.split('\n').length} lines)`);
  } finally {
    await database.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
