package org.forstrs.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** Where the repository's Markdown documents are: README.md and everything under docs/. */
public final class RepoDocs {

    private RepoDocs() {}

    /**
     * The repository root: the {@code forstrs.repo.root} property Maven sets, else the first
     * directory up from the working directory that holds {@code Cargo.toml} and {@code java/}.
     */
    public static Path root() {
        String configured = System.getProperty("forstrs.repo.root");
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured).toAbsolutePath().normalize();
        }
        for (Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
                dir != null;
                dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("Cargo.toml"))
                    && Files.isDirectory(dir.resolve("java"))) {
                return dir;
            }
        }
        throw new IllegalStateException(
                "repository root not found above " + System.getProperty("user.dir"));
    }

    /** README.md and every Markdown file under docs/, in a stable order. */
    public static List<Path> markdownFiles() {
        Path root = root();
        List<Path> files = new ArrayList<>();
        files.add(root.resolve("README.md"));
        try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    /** The file's text without fenced code blocks (their lines become empty). */
    public static List<String> proseLines(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> prose = new ArrayList<>();
        boolean inFence = false;
        for (String line : lines) {
            boolean fence = line.stripLeading().startsWith("```");
            if (fence) {
                inFence = !inFence;
            }
            prose.add(fence || inFence ? "" : line);
        }
        return prose;
    }
}
