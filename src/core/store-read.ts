/**
 * A read whose answer is made of the store alone: of its request (URL, the key's view) and the
 * rows it reads, nothing else (no clock, no other service). While the store's revision stays
 * the same, its answer to the same request is the same, so it may be kept (http/kept-answers.ts).
 * A feature says so of the handlers it writes; a version derived from one keeps the mark.
 */
const ofTheStore = Symbol('answered from the store alone')

/** `handler`, marked as answering from the store alone. */
export function fromStoreAlone<H extends object>(handler: H): H {
  return Object.assign(handler, { [ofTheStore]: true })
}

/** Whether `handler` answers from the store alone (fromStoreAlone). */
export const answersFromStoreAlone = (handler: object): boolean => ofTheStore in handler
