import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import { closesOfClients } from '@firm/close';
import { healthScan, listClients, RECIPES_VERSION, SKILLS, skillOf } from '@firm/gateway';
import { todayUtc } from '@firm/ledger';
import { Type } from 'typebox';
import { DataOf } from '../../schemas';
import { actorOf, tags } from './hooks';
import { HealthScanQuery, HealthScanResponse, Skill as SkillSchema, SkillParams } from './schemas';

/** The skills agents can follow, the recipe bundle, and the health scan across the agent's clients. */
export const skillRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.get(
    '/skills',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: { tags, summary: 'The skills agents can follow', response: { 200: DataOf(Type.Array(SkillSchema)) } },
    },
    async () => ({ data: [...SKILLS] }),
  );

  app.get(
    '/recipes',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: {
        tags,
        summary: 'The whole recipe bundle',
        response: { 200: DataOf(Type.Object({}, { additionalProperties: true })) },
      },
    },
    async () => ({ data: { version: RECIPES_VERSION, baseUrl: '/agent/v1', skills: SKILLS } }),
  );

  app.get(
    '/skills/client-health-scan',
    {
      config: { scope: 'acct:reports:read', organization: 'none', audit: 'skills.client-health-scan' },
      schema: {
        tags,
        summary: "Health scan across the agent's clients",
        description:
          'Read-only. For every client open to the caller: stale bank accounts, suspense or uncategorized balances, ' +
          "negative balances, receivables over 90 days, draft entries left open, books not closed, and last month's " +
          'close not finished (CLOSE_NOT_FINISHED: none opened, or open with its open items); each finding ' +
          'with its severity, client, evidence and the call that starts the fix. A client on QuickBooks Online is ' +
          "read through QBO's API (suspense and negative balances, receivables over 90 days); one that cannot be " +
          'read (its authorization refused, QBO down) is a CLIENT_UNREACHABLE finding, not an error of the scan.',
        querystring: HealthScanQuery,
        response: { 200: HealthScanResponse },
      },
    },
    async (request) => ({
      data: await healthScan(
        db(),
        await listClients(db(), request.credential),
        request.query.asOf ?? todayUtc(),
        (client) => app.gateway.platform(actorOf(request), client),
        closesOfClients(db(), request.credential.firmId),
      ),
    }),
  );

  app.get(
    '/skills/:skillId',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: { tags, summary: 'One skill recipe', params: SkillParams, response: { 200: DataOf(SkillSchema) } },
    },
    async (request) => {
      const skill = skillOf(request.params.skillId);
      if (!skill) throw new DomainError('NOT_FOUND', `no skill ${request.params.skillId}; GET /skills lists them`);
      return { data: skill };
    },
  );
};
