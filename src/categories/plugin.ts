import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { HandlersOf } from '../http/handlers.js'
import { type CategoryOperation, categoryHandlers } from './handlers.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** the handlers of the categories' operations, for the operations plugin */
    categoryOperations: HandlersOf<CategoryOperation>
  }
}

/** The categories pets are grouped under: their operations, at the newest contract's URLs. */
async function categoriesPlugin(app: FastifyInstance) {
  const { contract, storage } = app
  app.decorate(
    'categoryOperations',
    categoryHandlers(storage.categories, {
      categoriesUrl: contract.urlOf('listCategories'),
      categoryUrl: (categoryId) => contract.urlOf('getCategory', { categoryId }),
    }),
  )
}

export default fp(categoriesPlugin, { name: 'categories', fastify: '5.x', dependencies: ['storage'], decorators: { fastify: ['contract'] } })
