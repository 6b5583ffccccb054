import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { PGlite } from '@electric-sql/pglite';

/**
 * Opens the embedded database's data folder with PGlite (@electric-sql/pglite 0.5.14), keeping the process small:
 * `run` on a fresh folder went from ~900 MB resident to ~200 MB (README, "Memory"; `npm run bench:memory`).
 * Where the memory went, and what is done about it:
 *
 * - **initdb.** On a folder without a database, `PGlite.create` runs initdb inside the process: a second PGlite
 *   instance, the initdb WASM module and a copy of the first one's heap. The process peaked at ~850 MB and kept
 *   ~500 MB after they were closed: WASM memory never shrinks, and is returned only with its isolate (a worker_thread
 *   was tried: it left ~240 MB behind, in malloc arenas). So initdb runs in a child process, which returns everything
 *   when it exits, and this process then opens the folder like any existing one.
 * - **shared_buffers.** initdb writes PostgreSQL's default, 128 MB, and the buffers fill PGlite's WASM memory as pages
 *   are read: a reopened folder cost ~300 MB. The mirror's working set is small and its files sit in the OS page
 *   cache anyway, so the buffers are 16 MB, and what maintenance and temporary tables may take is bounded too. The
 *   settings are passed at every start (`-c`, over the folder's postgresql.conf), so older folders get them as well.
 * - **V8.** Two engine flags for the whole process, set before PGlite's WASM is compiled: `--liftoff-only` compiles
 *   PostgreSQL's 9 MB of WASM once with the baseline compiler instead of re-optimizing hot functions with TurboFan in
 *   the background (~40–60 MB less; queries measured as fast on the mirror's workload, as the optimizing compiler
 *   competed for the same cores), and `--optimize-for-size` makes the JavaScript heap collect before it grows (each
 *   poll of a list of 1,000 tickets leaves megabytes of garbage, which otherwise piled up to 130 MB between major
 *   collections). Both are long-standing V8 flags; `setFlagsFromString` ignores one a later V8 would not know.
 *
 * A crash during the very first start must not leave a folder that looks like a database but is not one: PGlite
 * tells them apart by the file PG_VERSION alone. initdb therefore writes to a scratch folder inside the data folder
 * (the same file system), whose entries are then renamed into place with PG_VERSION last; what an interrupted attempt
 * left — a scratch folder, entries without PG_VERSION — is replaced by the next one.
 */

/** PostgreSQL settings of the embedded database, passed at every start. */
export const PGLITE_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '16MB',
  maintenance_work_mem: '16MB',
  temp_buffers: '4MB',
};

const V8_FLAGS = ['--liftoff-only', '--optimize-for-size'];
/** Scratch folders of initdb, one per attempt: `.initdb-<pid>`. */
const SCRATCH_PREFIX = '.initdb-';
const MARKER = 'PG_VERSION';

const settingArgs = (): string[] => Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`]);

/**
 * Opens the database in `dir` (which the caller has locked), creating it first if there is none (`onCreate` is told
 * first: the process is otherwise silent for the seconds initdb takes).
 */
export async function openPgliteFolder(dir: string, onCreate?: (dir: string) => void): Promise<PGlite> {
  for (const flag of V8_FLAGS) setFlagsFromString(flag);
  removeScratch(dir);
  if (!existsSync(join(dir, MARKER))) {
    onCreate?.(dir);
    await initdbInChild(dir);
  }
  return PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, ...settingArgs()] });
}

/** Runs initdb in a child process into a scratch folder, then moves the new database into `dir`, PG_VERSION last. */
async function initdbInChild(dir: string): Promise<void> {
  // The child names its scratch folder after its own pid, so that a later start can tell whether it still runs.
  const script =
    `import { mkdirSync } from 'node:fs';\n` +
    `import { setFlagsFromString } from 'node:v8';\n` +
    `for (const flag of ${JSON.stringify(V8_FLAGS)}) setFlagsFromString(flag);\n` +
    `const { PGlite } = await import(${JSON.stringify(import.meta.resolve('@electric-sql/pglite'))});\n` +
    `const scratch = ${JSON.stringify(join(dir, SCRATCH_PREFIX))} + process.pid;\n` +
    `mkdirSync(scratch, { recursive: true, mode: 0o700 });\n` +
    `const db = await PGlite.create(scratch, { initDbStartParams: ${JSON.stringify(settingArgs())} });\n` +
    `await db.close();\n`;
  const scratch = await new Promise<string>((resolve, reject) => {
    // Plain JavaScript and no loader: the child needs nothing of this code base but PGlite.
    const child = spawn(process.execPath, ['--input-type=module', '--eval', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    const scratch = join(dir, `${SCRATCH_PREFIX}${child.pid}`);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 && existsSync(join(scratch, MARKER))
        ? resolve(scratch)
        : reject(new Error(`could not create the embedded database in ${dir}: initdb ${signal ? `was killed (${signal})` : `exited with ${code}`}: ${stderr.trim()}`)),
    );
  });
  const entries = readdirSync(scratch).filter((name) => name !== MARKER);
  for (const name of [...entries, MARKER]) {
    // Without PG_VERSION the folder holds no database: what an interrupted attempt left is ours to replace.
    rmSync(join(dir, name), { recursive: true, force: true });
    renameSync(join(scratch, name), join(dir, name));
  }
  rmSync(scratch, { recursive: true, force: true });
}

/**
 * Scratch folders of earlier attempts, whose process died before it moved them into place. The initdb child of a
 * process killed mid-start outlives it (a supervisor that kills the main process alone, `kill -9`): it would go on
 * writing into its folder for the rest of its initdb, at ~500 MB resident, and a start that a supervisor keeps killing
 * early would pile them up. Each folder is named after its child, which is killed first when it still runs (Linux:
 * a process of that pid whose command line is this folder's initdb). Where that cannot be told, or while a killed one
 * winds down, the removal is retried (ENOTEMPTY) for about five seconds (ten tries, 0.1 s longer each) rather than
 * failing the start.
 */
function removeScratch(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(SCRATCH_PREFIX)) continue;
    stopOrphanedInitdb(Number(name.slice(SCRATCH_PREFIX.length)), dir);
    rmSync(join(dir, name), { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
}

/** Kills the initdb child `pid` of an earlier start in `dir`, if it still runs; anything else of that pid is left alone. */
function stopOrphanedInitdb(pid: number, dir: string): void {
  if (!Number.isSafeInteger(pid) || pid <= 1 || pid === process.pid) return;
  let commandLine: string;
  try {
    commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return; // gone, or no /proc to tell whose it is
  }
  if (!commandLine.includes(JSON.stringify(join(dir, SCRATCH_PREFIX))) || !commandLine.includes('PGlite.create')) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
}
