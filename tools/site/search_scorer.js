/*
 * The course website's search scores (Sphinx's html_search_scorer): Sphinx's own weights, and
 * among pages that score the same for a query, a lesson before an exercise before a guide:
 * the lesson is where a term is taught. Loaded by language_data.js, after searchtools.js.
 */
var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    if (docname.startsWith("notebooks/")) return score + 2;
    if (docname.startsWith("exercises/")) return score + 1;
    return score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
