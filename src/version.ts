import { readFileSync } from 'node:fs';

/**
 * The version of ticket-mirror, from package.json: beside src/ in a checkout, beside dist/ in the Docker image (both
 * one folder up from this file). `--version` prints it; the build-info metric carries it.
 */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
