/**
 * Every property of T, each given (an optional one as its value or undefined): an object literal
 * written as this type names each property, so a property T gains is a compile error there until
 * it is written. What builds an API object of another does so: a spread would carry along what
 * it is not told, but at a cost on every object of a page, and without the compiler's word.
 */
export type Every<T> = { [K in keyof Required<T>]: T[K] }
