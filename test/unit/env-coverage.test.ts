import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMAND_HELP, helpText } from '../../src/cli/commandHelp.ts';
import { buildProgram } from '../../src/cli/program.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';

/**
 * Every environment variable the code reads is documented where people look: `.env.example` (with its real default),
 * the README's Configuration table, and the `--help` of at least one command. The list is taken from the code itself —
 * loadConfig.ts's schema keys and every `env.NAME` / `merged.NAME` it reads outside the schema — so a variable added
 * there without its documentation fails here.
 */

const root = resolve(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(resolve(root, path), 'utf8');

function variablesInCode(): string[] {
  const source = read('src/config/loadConfig.ts');
  const schema = source.match(/const EnvSchema = z\.object\(\{([\s\S]*?)\n\}\);/)?.[1];
  if (schema === undefined) throw new Error('EnvSchema not found in loadConfig.ts: update this test');
  const names = new Set<string>();
  for (const m of schema.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)) names.add(m[1]!);
  for (const m of source.matchAll(/\b(?:env|merged)(?:\.|\[['"])([A-Z][A-Z0-9_]*)/g)) names.add(m[1]!);
  return [...names].sort();
}

/** `.env.example`'s lines `NAME=value` or `# NAME=value`, as name → value. */
function exampleLines(): Map<string, string> {
  const lines = new Map<string, string>();
  for (const m of read('.env.example').matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=(.*)$/gm)) lines.set(m[1]!, m[2]!);
  return lines;
}

function readmeTable(): string[] {
  const section = read('README.md').match(/^## Configuration\n([\s\S]*?)^## /m)?.[1] ?? '';
  return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]!);
}

const variables = variablesInCode();

describe('the environment, documented', () => {
  it('is found in the code (the derivation itself works)', () => {
    for (const known of ['TICKETS_API_URL', 'TICKETS_API_TOKEN', 'DATABASE_URL', 'PGLITE_DIR', 'PGLITE_PASSWORD', 'LOG_LEVEL']) {
      expect(variables).toContain(known);
    }
  });

  it.each(variables)('%s is in .env.example, the README table and the --help of a command', (name) => {
    expect([...exampleLines().keys()]).toContain(name);
    expect(readmeTable()).toContain(name);
    expect(Object.entries(COMMAND_HELP).filter(([, help]) => help.env.includes(name)).map(([command]) => command)).not.toEqual([]);
  });

  it('lists no variable the code does not read', () => {
    expect([...exampleLines().keys()].filter((name) => !variables.includes(name))).toEqual([]);
    expect(readmeTable().filter((name) => !variables.includes(name))).toEqual([]);
    expect(Object.values(COMMAND_HELP).flatMap((help) => help.env.filter((name) => !variables.includes(name)))).toEqual([]);
  });

  it(".env.example's values are the defaults: setting one changes nothing", () => {
    const cwd = resolve(root, 'test');
    const { notes: _, ...defaults } = loadConfig({}, { cwd, dotenv: false });
    const given = [...exampleLines()].filter(([, value]) => value !== '');
    expect(given.length).toBeGreaterThan(10);
    for (const [name, value] of given) {
      const { notes: __, ...config } = loadConfig({ [name]: value }, { cwd, dotenv: false });
      expect({ name, config }).toEqual({ name, config: defaults });
    }
  });

  it('every command has its variables and exit codes in its --help', () => {
    const program = buildProgram();
    expect(program.commands.map((c) => c.name()).filter((name) => !Object.hasOwn(COMMAND_HELP, name))).toEqual([]);
    for (const command of program.commands) {
      let help = '';
      command.configureOutput({ writeOut: (text) => void (help += text) });
      command.outputHelp();
      expect(help).toContain(helpText(command.name())!.trim());
      expect(help).toMatch(/\nExit codes:\n {2}0 /);
    }
  });
});
