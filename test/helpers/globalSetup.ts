import type { TestProject } from 'vitest/node';

/**
 * Finds the real PostgreSQL the integration tests use, in this order:
 *   1. TEST_DATABASE_URL, when set (CI sets it);
 *   2. a throw-away container through testcontainers, when a container runtime answers;
 *   3. none: the tests that need PostgreSQL are skipped, loudly. PGlite tests still run.
 * It prints which one ran, so a log always says what the suite was tested against.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string | null;
  }
}

let stop: (() => Promise<unknown>) | undefined;

export async function setup(project: TestProject): Promise<void> {
  const given = process.env.TEST_DATABASE_URL;
  if (given) {
    process.stdout.write(`[ticket-mirror tests] PostgreSQL: TEST_DATABASE_URL (${given.replace(/:[^:@/]*@/, ':***@')})\n`);
    project.provide('postgresUrl', given);
    return;
  }
  const { getContainerRuntimeClient } = await import('testcontainers');
  try {
    await getContainerRuntimeClient();
  } catch {
    process.stdout.write(
      '[ticket-mirror tests] PostgreSQL: NONE (no TEST_DATABASE_URL, no container runtime) — tests that need a real PostgreSQL are SKIPPED\n',
    );
    project.provide('postgresUrl', null);
    return;
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:16-alpine').start();
  stop = () => container.stop();
  process.stdout.write(`[ticket-mirror tests] PostgreSQL: testcontainers (${container.getHost()}:${container.getPort()})\n`);
  project.provide('postgresUrl', container.getConnectionUri());
}

export async function teardown(): Promise<void> {
  await stop?.();
}
