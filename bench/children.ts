import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Runs bench scripts in child processes (TypeScript through tsx), at most `jobs` at once. */

const HERE = fileURLToPath(new URL('.', import.meta.url));

/** Runs `bench/<script>` with `args`; its stderr lines are passed on, prefixed. Rejects on a non-zero exit. */
export function runScript(script: string, args: readonly string[], label: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `${HERE}${script}`, ...args], { stdio: ['ignore', 'inherit', 'pipe'] });
    let tail = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      tail = (tail + chunk).slice(-4000);
      for (const line of chunk.split('\n')) if (line.trim()) process.stderr.write(`  [${label}] ${line}\n`);
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${script} ${args.join(' ')} exited with ${code}\n${tail}`))));
  });
}

/** Runs the tasks, `jobs` at a time, in order of start. */
export async function pool<T>(tasks: ReadonlyArray<() => Promise<T>>, jobs: number): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, tasks.length)) }, worker));
  return results;
}
