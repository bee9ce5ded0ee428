import { randomBytes } from 'node:crypto';
import { openDatabase } from '@firm/db';
import { adminQuery, withDatabase } from '@firm/db/testing';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string | null;
  }
}

/** Migrates one template database per run; every test file clones it (Postgres only). */
export default async function setup(project: TestProject) {
  const baseUrl = process.env.DATABASE_URL;
  project.provide('templateDatabase', null);
  if (!baseUrl) return;
  const name = `test_template_${randomBytes(4).toString('hex')}`;
  await adminQuery(baseUrl, `create database ${name}`);
  const database = openDatabase({ url: withDatabase(baseUrl, name), poolMax: 1 });
  await database.migrate();
  await database.close();
  project.provide('templateDatabase', name);
  return async () => {
    await adminQuery(baseUrl, `drop database if exists ${name} with (force)`);
  };
}
