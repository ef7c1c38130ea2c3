/*
 * Analysis components of Elasticsearch's analysis-common module, for the integ-test distribution, which lacks it.
 * The four the `.security` index settings name (analyzer `email`: tokenizer `uax_url_email`, filters
 * `pattern_capture`, `lowercase`, `unique`), and those reme-es' index templates use, so the managed node analyses
 * text as every real Elasticsearch does: the `stemmer` filter (english, porter, light_english, minimal_english,
 * possessive_english), `porter_stem`, and the `english` and `cjk` analyzers. Each is Lucene's implementation, which
 * the distribution's lib/ already holds, configured as analysis-common configures it. Built and installed by
 * reme_es.server.es_plugin.
 */
package reme.es.testanalysis;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.TokenFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.cjk.CJKAnalyzer;
import org.apache.lucene.analysis.core.LowerCaseFilter;
import org.apache.lucene.analysis.email.UAX29URLEmailTokenizer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.en.EnglishMinimalStemFilter;
import org.apache.lucene.analysis.en.EnglishPossessiveFilter;
import org.apache.lucene.analysis.en.KStemFilter;
import org.apache.lucene.analysis.en.PorterStemFilter;
import org.apache.lucene.analysis.miscellaneous.RemoveDuplicatesTokenFilter;
import org.apache.lucene.analysis.pattern.PatternCaptureGroupTokenFilter;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.AbstractTokenFilterFactory;
import org.elasticsearch.index.analysis.AbstractTokenizerFactory;
import org.elasticsearch.index.analysis.Analysis;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.index.analysis.NormalizingTokenFilterFactory;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

public class RemeTestAnalysisPlugin extends Plugin implements AnalysisPlugin {

    @Override
    public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        return Map.of(
            // without index settings there are no patterns: not offered as a global (unconfigured) filter
            "pattern_capture",
            AnalysisPlugin.requiresAnalysisSettings((index, env, name, settings) -> new PatternCapture(name, settings)),
            "lowercase", (index, env, name, settings) -> new Lowercase(name, settings),
            "unique", (index, env, name, settings) -> new Unique(name, settings),
            "stemmer", (index, env, name, settings) -> new Stemmer(name, settings),
            "porter_stem", (index, env, name, settings) -> new Stemmer(name, Settings.builder().put("language", "porter").build())
        );
    }

    @Override
    public Map<String, AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
        return Map.of(
            "english", (index, env, name, settings) -> new Provided<>(name, new EnglishAnalyzer(
                Analysis.parseStopWords(env, settings, EnglishAnalyzer.getDefaultStopSet()),
                Analysis.parseStemExclusion(settings, CharArraySet.EMPTY_SET))),
            "cjk", (index, env, name, settings) -> new Provided<>(name, new CJKAnalyzer(
                Analysis.parseStopWords(env, settings, CJKAnalyzer.getDefaultStopSet())))
        );
    }

    /** An analyzer built once from its settings. */
    static final class Provided<T extends Analyzer> extends AbstractIndexAnalyzerProvider<T> {
        private final T analyzer;

        Provided(String name, T analyzer) {
            super(name);
            this.analyzer = analyzer;
        }

        @Override
        public T get() {
            return analyzer;
        }
    }

    /** The English stemmers of analysis-common's `stemmer` filter, by `language` (or `name`; default english). */
    static final class Stemmer extends AbstractTokenFilterFactory {
        private final String language;

        Stemmer(String name, Settings settings) {
            super(name);
            language = settings.get("language", settings.get("name", "english"));
            if (!List.of("english", "porter", "light_english", "kstem", "minimal_english", "possessive_english")
                    .contains(language)) {
                throw new IllegalArgumentException("stemmer filter [" + name + "]: language [" + language + "] is not "
                    + "provided by the reme-es test analysis plugin (english, porter, light_english, minimal_english, "
                    + "possessive_english)");
            }
        }

        @Override
        public TokenStream create(TokenStream input) {
            return switch (language) {
                case "light_english", "kstem" -> new KStemFilter(input);
                case "minimal_english" -> new EnglishMinimalStemFilter(input);
                case "possessive_english" -> new EnglishPossessiveFilter(input);
                default -> new PorterStemFilter(input);
            };
        }
    }

    @Override
    public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return Map.of("uax_url_email", (index, env, name, settings) -> new UaxUrlEmail(name, settings));
    }

    /** `patterns` (required): one token per capture group of each; `preserve_original` (default true). */
    static final class PatternCapture extends AbstractTokenFilterFactory {
        private final Pattern[] patterns;
        private final boolean preserveOriginal;

        PatternCapture(String name, Settings settings) {
            super(name);
            List<String> regexes = settings.getAsList("patterns");
            if (regexes.isEmpty()) {
                throw new IllegalArgumentException("pattern_capture filter [" + name + "] needs [patterns]");
            }
            patterns = regexes.stream().map(Pattern::compile).toArray(Pattern[]::new);
            preserveOriginal = settings.getAsBoolean("preserve_original", true);
        }

        @Override
        public TokenStream create(TokenStream input) {
            return new PatternCaptureGroupTokenFilter(input, preserveOriginal, patterns);
        }
    }

    /** Lower-cases by Unicode rules; the language variants (greek, irish, turkish) are not provided here. */
    static final class Lowercase extends AbstractTokenFilterFactory implements NormalizingTokenFilterFactory {
        Lowercase(String name, Settings settings) {
            super(name);
            if (settings.get("language") != null) {
                throw new IllegalArgumentException("lowercase filter [" + name + "]: [language] is not supported by "
                    + "the reme-es test analysis plugin");
            }
        }

        @Override
        public TokenStream create(TokenStream input) {
            return new LowerCaseFilter(input);
        }
    }

    /** Drops a token whose text came earlier in the stream; with `only_on_same_position`, only at one position. */
    static final class Unique extends AbstractTokenFilterFactory {
        private final boolean onlyOnSamePosition;

        Unique(String name, Settings settings) {
            super(name);
            onlyOnSamePosition = settings.getAsBoolean("only_on_same_position", false);
        }

        @Override
        public TokenStream create(TokenStream input) {
            return onlyOnSamePosition ? new RemoveDuplicatesTokenFilter(input) : new FirstOccurrences(input);
        }
    }

    /** Passes each distinct term once, the first time it appears. */
    static final class FirstOccurrences extends TokenFilter {
        private final CharTermAttribute term = addAttribute(CharTermAttribute.class);
        private final CharArraySet seen = new CharArraySet(16, false);

        FirstOccurrences(TokenStream input) {
            super(input);
        }

        @Override
        public boolean incrementToken() throws IOException {
            while (input.incrementToken()) {
                if (!seen.contains(term.buffer(), 0, term.length())) {
                    seen.add(term.toString());
                    return true;
                }
            }
            return false;
        }

        @Override
        public void reset() throws IOException {
            super.reset();
            seen.clear();
        }
    }

    /** Unicode word boundaries that keep URLs and e-mail addresses whole; `max_token_length` (default 255). */
    static final class UaxUrlEmail extends AbstractTokenizerFactory {
        private final int maxTokenLength;

        UaxUrlEmail(String name, Settings settings) {
            super(name);
            maxTokenLength = settings.getAsInt("max_token_length", StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH);
        }

        @Override
        public Tokenizer create() {
            UAX29URLEmailTokenizer tokenizer = new UAX29URLEmailTokenizer();
            tokenizer.setMaxTokenLength(maxTokenLength);
            return tokenizer;
        }
    }
}
