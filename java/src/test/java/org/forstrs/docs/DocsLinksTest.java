package org.forstrs.docs;

import org.junit.jupiter.api.Test;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every relative link of README.md and docs/**.md leads somewhere: the file (or directory)
 * exists, and a {@code #anchor} names a heading of the Markdown file it points into, by GitHub's
 * slug rules.
 */
class DocsLinksTest {

    /** The target of an inline link or image: {@code ](target)} or {@code ](target "title")}. */
    private static final Pattern INLINE =
            Pattern.compile("\\]\\(\\s*<?([^)\\s>]*)>?(?:\\s+\"[^\"]*\")?\\s*\\)");

    /** A reference definition: {@code [name]: target}. */
    private static final Pattern REFERENCE =
            Pattern.compile("^\\s{0,3}\\[[^\\]]+\\]:\\s*<?(\\S+?)>?(?:\\s.*)?$");

    private static final Pattern CODE_SPAN = Pattern.compile("`[^`]*`");

    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");

    private static final Pattern SCHEME = Pattern.compile("^[a-zA-Z][a-zA-Z0-9+.-]*:");

    @Test
    void everyRelativeLinkResolves() {
        Path root = RepoDocs.root();
        List<String> broken = new ArrayList<>();
        Map<Path, Set<String>> anchors = new HashMap<>();
        int checked = 0;
        for (Path file : RepoDocs.markdownFiles()) {
            for (String target : links(file)) {
                if (SCHEME.matcher(target).find()) {
                    continue; // http:, https:, mailto: ...
                }
                checked++;
                String problem = problem(file, target, anchors);
                if (problem != null) {
                    broken.add(root.relativize(file) + ": (" + target + ") " + problem);
                }
            }
        }
        assertThat(checked).as("relative links found").isPositive();
        assertThat(broken).as("broken relative links").isEmpty();
    }

    @Test
    void slugsFollowGitHub() {
        assertThat(slug("Who deletes a handed-over file"))
                .isEqualTo("who-deletes-a-handed-over-file");
        assertThat(slug("Engine modules (`rust/lsm/`)")).isEqualTo("engine-modules-rustlsm");
        assertThat(slug("Flink's S3 keys and the native store"))
                .isEqualTo("flinks-s3-keys-and-the-native-store");
        assertThat(slug("Tests (`scripts/test.sh`)")).isEqualTo("tests-scriptstestsh");
        assertThat(slug("[Linked](x.md) heading")).isEqualTo("linked-heading");
    }

    /** Why {@code target}, linked from {@code file}, leads nowhere; null if it resolves. */
    private static String problem(Path file, String target, Map<Path, Set<String>> anchors) {
        int hash = target.indexOf('#');
        String pathPart = hash < 0 ? target : target.substring(0, hash);
        String anchor = hash < 0 ? null : target.substring(hash + 1);
        Path resolved =
                pathPart.isEmpty()
                        ? file
                        : pathPart.startsWith("/")
                                ? RepoDocs.root().resolve(decode(pathPart.substring(1)))
                                : file.getParent().resolve(decode(pathPart)).normalize();
        if (!Files.exists(resolved)) {
            return "no such file";
        }
        if (anchor == null || anchor.isEmpty()) {
            return null;
        }
        if (!resolved.toString().endsWith(".md")) {
            return "an anchor into a file that is not Markdown";
        }
        Set<String> known = anchors.computeIfAbsent(resolved, DocsLinksTest::headingSlugs);
        return known.contains(decode(anchor)) ? null : "no heading with anchor #" + anchor;
    }

    /** Every link target in the prose of {@code file} (code blocks and code spans left out). */
    private static List<String> links(Path file) {
        List<String> targets = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        for (String line : RepoDocs.proseLines(file)) {
            Matcher reference = REFERENCE.matcher(line);
            if (reference.matches()) {
                targets.add(reference.group(1));
                continue;
            }
            text.append(CODE_SPAN.matcher(line).replaceAll("")).append('\n');
        }
        Matcher inline = INLINE.matcher(text);
        while (inline.find()) {
            targets.add(inline.group(1));
        }
        return targets;
    }

    /** The anchors GitHub gives the headings of {@code file} (repeats get -1, -2, ...). */
    private static Set<String> headingSlugs(Path file) {
        Set<String> slugs = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : RepoDocs.proseLines(file)) {
            Matcher heading = HEADING.matcher(line);
            if (!heading.matches()) {
                continue;
            }
            String base = slug(heading.group(1));
            int count = seen.merge(base, 1, Integer::sum);
            slugs.add(count == 1 ? base : base + "-" + (count - 1));
        }
        return slugs;
    }

    /**
     * GitHub's anchor of a heading: the rendered text (links as their text, no code marks)
     * lowercased, with everything but letters, digits, spaces, '-' and '_' removed and spaces
     * turned into '-'.
     */
    static String slug(String heading) {
        String rendered = heading.replaceAll("!?\\[([^\\]]*)\\]\\([^)]*\\)", "$1");
        StringBuilder slug = new StringBuilder();
        for (char c : rendered.toLowerCase(Locale.ROOT).toCharArray()) {
            if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
                slug.append(c);
            } else if (c == ' ') {
                slug.append('-');
            }
        }
        return slug.toString();
    }

    private static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }
}
