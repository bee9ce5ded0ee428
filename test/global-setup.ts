import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '@firm/db';
import { adminQuery, serverUrl, withDatabase } from '@firm/db/testing';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string | null;
  }
}

/**
 * Migrates one template database per run; every test file clones it (Postgres only). Makes one directory for the run's
 * audit anchors (`testConfig` puts them there), removed at the end: test processes are stopped without a chance to
 * clean up after themselves.
 */
export default async function setup(project: TestProject) {
  const anchors = await mkdtemp(join(tmpdir(), 'audit-anchors-'));
  process.env.TEST_AUDIT_ANCHOR_DIR = anchors;
  const removeAnchors = () => rm(anchors, { recursive: true, force: true });
  // On the server itself: test databases are cloned from the template, which no pooler may hold a session on.
  const baseUrl = serverUrl();
  project.provide('templateDatabase', null);
  if (!baseUrl) return removeAnchors;
  const name = `test_template_${randomBytes(4).toString('hex')}`;
  await adminQuery(baseUrl, `create database ${name}`);
  const database = openDatabase({ url: withDatabase(baseUrl, name), poolMax: 1 });
  await database.migrate();
  await database.close();
  project.provide('templateDatabase', name);
  return async () => {
    await adminQuery(baseUrl, `drop database if exists ${name} with (force)`);
    await removeAnchors();
  };
}
