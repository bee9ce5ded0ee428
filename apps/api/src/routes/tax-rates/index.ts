import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { createTaxRate, getTaxRate, listTaxRates, presentTaxRate, updateTaxRate } from '@firm/documents';
import { errorResponses } from '../../errors/responses';
import { CompanyParams, DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import { NamedListQuery } from '../items/schemas';
import { CreateTaxRateBody, TaxRateList, TaxRateOne, TaxRateParams, UpdateTaxRateBody } from './schemas';

const tags = ['tax-rates'];

export const taxRateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  for (const form of ['header', 'path'] as const) {
    app.get(
      form === 'header' ? '/tax-rates' : '/companies/:companyId/tax-rates',
      {
        config: { scope: 'documents:read', organization: form },
        schema: {
          tags,
          summary: `List tax rates${form === 'path' ? ' of a company' : ''}`,
          description: 'Ordered by name (case-insensitive).',
          ...(form === 'path' ? { params: CompanyParams } : {}),
          querystring: NamedListQuery,
          response: { 200: TaxRateList },
        },
      },
      async (request) => {
        const { limit, ...rest } = request.query;
        const page = await listTaxRates(db(), request.organization.id, { limit: limit ?? DEFAULT_LIMIT, ...rest });
        return { data: page.data.map(presentTaxRate), nextCursor: page.nextCursor };
      },
    );
  }

  app.post(
    '/tax-rates',
    {
      config: { scope: 'documents:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Create a tax rate',
        body: CreateTaxRateBody,
        response: { 201: TaxRateOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const rate = await db().transaction((tx) =>
        createTaxRate(tx, ledgerContext(request), request.organization.id, request.body),
      );
      return reply.code(201).send({ data: presentTaxRate(rate) });
    },
  );

  app.get(
    '/tax-rates/:id',
    {
      config: { scope: 'documents:read', organization: 'header' },
      schema: { tags, summary: 'A tax rate', params: TaxRateParams, response: { 200: TaxRateOne } },
    },
    async (request) => ({ data: presentTaxRate(await getTaxRate(db(), request.organization.id, request.params.id)) }),
  );

  app.patch(
    '/tax-rates/:id',
    {
      config: { scope: 'documents:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Update or archive a tax rate',
        description: 'A new rate applies to documents written afterwards; existing documents keep their tax.',
        params: TaxRateParams,
        body: UpdateTaxRateBody,
        response: { 200: TaxRateOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request) => {
      const rate = await db().transaction((tx) =>
        updateTaxRate(tx, ledgerContext(request), request.organization.id, request.params.id, request.body),
      );
      return { data: presentTaxRate(rate) };
    },
  );
};
