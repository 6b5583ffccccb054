import { defineConfig } from 'drizzle-kit';

// The fleet's control schema (FLEET_SCHEMA): `npm run db:generate` writes its new migrations into migrations/fleet/
// after a change to src/db/fleetSchema.ts, as drizzle.config.ts does for each mirror's schema.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/fleetSchema.ts',
  out: './migrations/fleet',
});
