/**
 * Keyset pagination in id order (openapi.yaml: Pagination). A list is asked for one item more
 * than `limit`: when it comes, the list is cut to `limit` and its headers' `Link` names the next
 * page, which starts after the last id shown, with the same filters.
 */
export function pageOf<Item extends { id: number }>(
  items: Item[],
  list: { url: string; limit: number } & Record<string, string | number | undefined>,
): { page: Item[]; headers?: { Link: string } } {
  const { url, limit } = list
  if (items.length <= limit) return { page: items }
  items.length = limit
  // (the filters are the rest of `list`, read only here: a rest pattern copied them for every page)
  let query = ''
  for (const [name, value] of Object.entries(list))
    if (name !== 'url' && name !== 'limit' && value !== undefined) query += `&${name}=${encodeURIComponent(value)}`
  return { page: items, headers: { Link: `<${url}?limit=${limit}${query}&after=${items[limit - 1]!.id}>; rel="next"` } }
}
