/**
 * A read whose answer is made of the store alone: of its request (URL, the key's view) and the
 * rows it reads, nothing else (no clock, no other service), and of one part of the store (the
 * part's revision, storage/revision.ts, moves with every change of what it reads). While that
 * revision stays the same, its answer to the same request is the same, so it may be kept
 * (http/kept-answers.ts), and a page of it tagged before it is read (http/conditional.ts). A
 * feature says so of the handlers it writes, with the part a request reads; a version derived
 * from one keeps the mark.
 */
import type { FastifyRequest } from 'fastify'

const ofTheStore = Symbol('answered from the store alone')

/** The part of the store a request's answer is made of, by its name (storage/revision.ts). */
export type PartOf = (request: FastifyRequest) => string

/** `handler`, marked as answering from the store alone, from the part `partOf` names. */
export function fromStoreAlone<H extends object>(handler: H, partOf: PartOf): H {
  return Object.assign(handler, { [ofTheStore]: partOf })
}

/** The part of the store `handler` answers from, where it answers from the store alone (fromStoreAlone). */
export const storePartOf = (handler: object): PartOf | undefined => (handler as { [ofTheStore]?: PartOf })[ofTheStore]
