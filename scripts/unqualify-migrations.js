#!/usr/bin/env node
// drizzle-kit qualifies foreign-key targets with "public"; ticket-mirror places its tables with search_path
// (DB_SCHEMA), so the generated SQL must not name a schema. Run by `npm run db:generate`.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

// Both sets: each mirror's schema (migrations/) and the fleet's control schema (migrations/fleet/, FLEET_SCHEMA).
for (const folder of ['../migrations/', '../migrations/fleet/']) {
  const dir = new URL(folder, import.meta.url);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.sql'))) {
    const path = new URL(file, dir);
    const before = readFileSync(path, 'utf8');
    const after = before.replaceAll('"public".', '');
    if (after !== before) writeFileSync(path, after);
  }
}
