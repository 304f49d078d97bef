/**
 * Keyset pagination in id order (openapi.yaml: Pagination). A list is asked for one item more
 * than `limit`: when it comes, the list is cut to `limit` and `Link` names the next page, which
 * starts after the last id shown, with the same filters.
 */
export function pageOf<Item extends { id: number }>(
  items: Item[],
  { url, limit, ...filters }: { url: string; limit: number } & Record<string, string | number | undefined>,
): { page: Item[]; link?: string } {
  if (items.length <= limit) return { page: items }
  items.length = limit
  let query = ''
  for (const [name, value] of Object.entries(filters)) if (value !== undefined) query += `&${name}=${encodeURIComponent(value)}`
  return { page: items, link: `<${url}?limit=${limit}${query}&after=${items[limit - 1]!.id}>; rel="next"` }
}
