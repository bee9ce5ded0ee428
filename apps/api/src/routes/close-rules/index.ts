import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listCloseRules, setCloseRule } from '@firm/close';
import { DomainError } from '@firm/core';
import { errorResponses } from '../../errors';
import { requireFirmManager } from '../context';
import { CloseRuleList, CloseRuleOne, CloseRuleParams, CloseRulePatch } from './schemas';

const tags = ['close-rules'];

/** The month-end checklist's rules as the firm has them, and the firm's settings of them. */
export const closeRuleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.get(
    '/close-rules',
    {
      config: { scope: 'reports:read', organization: 'none' },
      schema: {
        tags,
        summary: "The month-end checklist's rules, with the firm's settings",
        description:
          'Every rule of the close checklist in the order its items are listed: its kind, severity, what it finds, ' +
          "whether the firm runs it and each threshold with the firm's value and the default.",
        response: { 200: CloseRuleList },
      },
    },
    async (request) => ({ data: await listCloseRules(db(), request.credential.firmId) }),
  );

  app.patch(
    '/close-rules/:kind',
    {
      config: { scope: 'books:close', organization: 'firm' },
      schema: {
        tags,
        summary: 'Turn a checklist rule off or on, or tune its thresholds, for the firm',
        description:
          'For firm owners and admins (a session, or an API key of the firm covering every organization); an OAuth ' +
          'access token (an agent) cannot: 403 FORBIDDEN. Turning a blocking rule off, an unknown threshold, or a ' +
          "value that is not a whole number at least the threshold's min is 400 VALIDATION_ERROR and changes " +
          'nothing; an unknown kind is 404 NOT_FOUND. Applies to every checklist the firm computes from then on.',
        params: CloseRuleParams,
        body: CloseRulePatch,
        response: { 200: CloseRuleOne, ...errorResponses(415) },
      },
    },
    async (request) => {
      if (request.credential.kind === 'oauth_token') {
        throw new DomainError('FORBIDDEN', "an agent cannot change the firm's checklist rules; an owner or admin does");
      }
      await requireFirmManager(request, "change the firm's checklist rules");
      return { data: await setCloseRule(db(), request.credential.firmId, request.params.kind, request.body) };
    },
  );
};
