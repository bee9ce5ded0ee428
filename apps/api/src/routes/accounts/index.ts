import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  accountLedger,
  createAccount,
  deleteAccount,
  getAccount,
  listAccounts,
  presentAccount,
  updateAccount,
} from '@firm/ledger';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import {
  AccountDetailOne,
  AccountDetailQuery,
  AccountList,
  AccountListQuery,
  AccountOne,
  AccountParams,
  CompanyParams,
  CreateAccountBody,
  UpdateAccountBody,
} from './schemas';

const tags = ['accounts'];

export const accountRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.get(
    '/accounts',
    {
      config: { scope: 'accounts:read', organization: 'header' },
      schema: { tags, summary: 'List accounts', querystring: AccountListQuery, response: { 200: AccountList } },
    },
    async (request) => {
      const { limit, ...rest } = request.query;
      const page = await listAccounts(db(), request.organization.id, { limit: limit ?? DEFAULT_LIMIT, ...rest });
      return { data: page.data.map(presentAccount), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/companies/:companyId/accounts',
    {
      config: { scope: 'accounts:read', organization: 'path' },
      schema: {
        tags,
        summary: 'Chart accounts of a company',
        params: CompanyParams,
        querystring: AccountListQuery,
        response: { 200: AccountList },
      },
    },
    async (request) => {
      const { limit, ...rest } = request.query;
      const page = await listAccounts(db(), request.organization.id, { limit: limit ?? DEFAULT_LIMIT, ...rest });
      return { data: page.data.map(presentAccount), nextCursor: page.nextCursor };
    },
  );

  app.post(
    '/accounts',
    {
      config: { scope: 'accounts:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Create an account',
        body: CreateAccountBody,
        response: { 201: AccountOne, ...errorResponses(409, 415) },
      },
    },
    async (request, reply) => {
      const account = await db().transaction((tx) =>
        createAccount(tx, ledgerContext(request), request.organization.id, request.body),
      );
      return reply.code(201).send({ data: presentAccount(account) });
    },
  );

  app.get(
    '/accounts/:id',
    {
      config: { scope: 'accounts:read', organization: 'header' },
      schema: {
        tags,
        summary: 'Account with its balance and ledger detail',
        params: AccountParams,
        querystring: AccountDetailQuery,
        response: { 200: AccountDetailOne },
      },
    },
    async (request) => {
      const account = await getAccount(db(), request.organization.id, request.params.id);
      const ledger = await accountLedger(db(), request.organization.id, account, {
        ...request.query,
        limit: request.query.limit ?? DEFAULT_LIMIT,
      });
      return { data: { ...presentAccount(account), balanceCents: ledger.closingBalanceCents, ledger } };
    },
  );

  app.patch(
    '/accounts/:id',
    {
      config: { scope: 'accounts:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Update account metadata',
        description: 'The type of an account that has journal lines cannot change.',
        params: AccountParams,
        body: UpdateAccountBody,
        response: { 200: AccountOne, ...errorResponses(409, 415) },
      },
    },
    async (request) => {
      const account = await db().transaction((tx) =>
        updateAccount(tx, ledgerContext(request), request.organization.id, request.params.id, request.body),
      );
      return { data: presentAccount(account) };
    },
  );

  app.delete(
    '/accounts/:id',
    {
      config: { scope: 'accounts:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Delete an unused account',
        description: 'Refused with 409 ACCOUNT_IN_USE when any journal line uses the account; archive it instead.',
        params: AccountParams,
        response: { 204: Type.Null({ description: 'Deleted.' }), ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      await db().transaction((tx) =>
        deleteAccount(tx, ledgerContext(request), request.organization.id, request.params.id),
      );
      return reply.code(204).send(null);
    },
  );
};
