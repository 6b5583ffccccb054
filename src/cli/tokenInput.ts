import { resolve } from 'node:path';
import { TOKEN_FILE_MAX_BYTES, tokenCharactersProblem } from '../config/loadConfig.ts';
import { readAtMost, readProblem } from '../config/readAtMost.ts';
import { ConfigError } from '../errors.ts';
import { MAX_TOKEN_BYTES } from '../fleet/tokenSeal.ts';

/**
 * Where `accounts add` and `accounts seal` take a token from: standard input, a file, or an environment variable named
 * on the command line — never the command line itself, which every user of the machine can read (`ps`,
 * /proc/PID/cmdline) and the shell keeps in its history. So there is no `--token VALUE`, and no message here ever shows
 * a token or part of one.
 */

export interface TokenSource {
  tokenStdin?: boolean;
  tokenFile?: string;
  tokenEnv?: string;
}

const SOURCES = '--token-stdin, --token-file PATH or --token-env VAR';

/** The one source the options name, or a ConfigError (none, or more than one). */
export function chosenSource(options: TokenSource): 'stdin' | 'file' | 'env' {
  const given = [options.tokenStdin ? 'stdin' : null, options.tokenFile !== undefined ? 'file' : null, options.tokenEnv !== undefined ? 'env' : null].filter(
    (s): s is 'stdin' | 'file' | 'env' => s !== null,
  );
  if (given.length === 1) return given[0]!;
  throw new ConfigError([
    given.length === 0
      ? `the token is needed, from one of ${SOURCES} (never as an argument: command lines are visible to every user of the machine and kept in shell history)`
      : `the token comes from one source: give only one of ${SOURCES}`,
  ]);
}

/** Reads the token from the source the options name; `stdin` is the process's standard input. */
export async function readToken(options: TokenSource, stdin: NodeJS.ReadStream = process.stdin, cwd = process.cwd()): Promise<string> {
  switch (chosenSource(options)) {
    case 'stdin':
      return checkToken(await readStdin(stdin), 'standard input');
    case 'file':
      return checkToken(readTokenFile(options.tokenFile!, resolve(cwd, options.tokenFile!)), `--token-file ${options.tokenFile}`);
    case 'env': {
      const name = options.tokenEnv!;
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ConfigError([`--token-env ${JSON.stringify(name)} is not an environment variable's name`]);
      const value = process.env[name];
      if (value === undefined) throw new ConfigError([`--token-env ${name}: the environment has no ${name}`]);
      return checkToken(value, `--token-env ${name}`);
    }
  }
}

/**
 * A token as given, trimmed; refused (without showing it) when empty, too long, or holding a space, a control character
 * or a character outside ASCII (see tokenCharactersProblem: TICKETS_API_TOKEN's rule).
 */
export function checkToken(raw: string, from: string): string {
  const token = raw.trim();
  if (token === '') throw new ConfigError([`the token from ${from} is empty`]);
  if (Buffer.byteLength(token) > MAX_TOKEN_BYTES) throw new ConfigError([`the token from ${from} is longer than ${MAX_TOKEN_BYTES} bytes`]);
  const problem = tokenCharactersProblem(token);
  if (problem) throw new ConfigError([`the token from ${from} ${problem}`]);
  return token;
}

/** The file `given` (named so in messages) at `path`: at most TOKEN_FILE_MAX_BYTES, and a named pipe no longer than 10 s. */
function readTokenFile(given: string, path: string): string {
  let bytes: Buffer;
  try {
    bytes = readAtMost(path, TOKEN_FILE_MAX_BYTES + 1);
  } catch (error) {
    throw new ConfigError([`--token-file ${given} cannot be read (${readProblem(error)})`]);
  }
  if (bytes.length > TOKEN_FILE_MAX_BYTES) throw new ConfigError([`--token-file ${given} holds more than ${TOKEN_FILE_MAX_BYTES} bytes: not a token file`]);
  return bytes.toString('utf8');
}

/**
 * Standard input to its end, at most 64 KiB. On a terminal, one line typed without echo (so that the token is not
 * left on the screen), after a prompt on stderr.
 */
async function readStdin(stdin: NodeJS.ReadStream): Promise<string> {
  if (stdin.isTTY) return readLineUnechoed(stdin);
  let text = '';
  for await (const chunk of stdin) {
    text += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
    if (text.length > TOKEN_FILE_MAX_BYTES) throw new ConfigError(['standard input holds more than 64 KiB: not a token']);
  }
  return text;
}

function readLineUnechoed(stdin: NodeJS.ReadStream): Promise<string> {
  process.stderr.write('token (not shown as you type; Enter to end): ');
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((done, fail) => {
    let line = '';
    const finish = (error?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      if (error) fail(error);
      else done(line);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish();
        if (ch === '\u0003') return finish(new ConfigError(['interrupted: no token read']));
        if (ch === '\u007f' || ch === '\b') line = line.slice(0, -1);
        else line += ch;
      }
    };
    stdin.on('data', onData);
  });
}
