package org.forstrs.flink;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

import org.forstrs.tools.ForStTool;
import org.forstrs.tools.ReferencedFiles;
import org.forstrs.tools.ServingTool;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;

import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ForStTool serve} on the job directory of a real job ({@link ToolStateJob}, State V1 and
 * V2 on ForSt-RS, two retained checkpoints taken at half and at all of its input), browsed in a
 * real headless Chromium through Selenium: the page lists the operators and states with the
 * entry counts the job wrote, a key lookup shows the value the job wrote, a paged scan shows
 * what {@code dump} prints page by page, the diff lists the files each checkpoint references and
 * the other does not; nothing under the job directory appears or changes. Leaves screenshots
 * in {@code target/web-monitor/}: {@code monitor.png} (the whole page) and {@code
 * monitor-top.png} (its top, copied to {@code docs/images/web-monitor.png} for the README).
 */
class WebMonitorITCase {

    private static final long RECORDS = 2_000;
    private static final int PAGE = 10;
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void thePageShowsWhatTheJobWroteAndBrowsingChangesNothing(
            @TempDir Path primary, @TempDir Path checkpoints, @TempDir Path profile)
            throws Exception {
        Configuration config = CountingJob.config(primary, checkpoints);
        config.setString("state.backend.forst.primary-dir", "checkpoint-dir");
        config.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 20);
        // Small memtables and no compaction: the browsed checkpoint holds over 100 SSTs.
        config.setString("state.backend.forst.writebuffer.size", "16kb");
        config.setString("state.backend.forst.engine.auto-compaction", "false");
        String run = "web-" + UUID.randomUUID();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(2);
        ToolStateJob.build(env, run, RECORDS);
        PacedSequence.holdAt(run, RECORDS / 2);
        JobClient job = env.executeAsync("state for the web monitor");
        String jobDir = checkpoints.toUri().toString().replaceAll("/+$", "") + "/" + job.getJobID();
        Await.until("half the input", () -> PacedSequence.generated(run) >= RECORDS / 2, job);
        String a = CheckpointFiles.checkpointAfterNow(job, jobDir);
        PacedSequence.holdAt(run, RECORDS);
        Await.until("all the input", () -> PacedSequence.generated(run) >= RECORDS, job);
        String b = CheckpointFiles.checkpointAfterNow(job, jobDir);
        job.cancel().get();
        // The job's own MiniCluster shuts down once the job ended: wait on its result.
        job.getJobExecutionResult().handle((result, failure) -> null).get();
        String nameA = a.substring(a.lastIndexOf('/') + 1);
        String nameB = b.substring(b.lastIndexOf('/') + 1);
        Map<String, String> before = CheckpointFiles.hashedContents(jobDir);

        ChromeDriverService service =
                new ChromeDriverService.Builder()
                        .usingDriverExecutable(new File("/usr/bin/chromedriver"))
                        .usingAnyFreePort()
                        .build();
        ChromeOptions options = new ChromeOptions();
        options.setBinary("/usr/bin/chromium");
        options.addArguments(
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--user-data-dir=" + profile);
        ChromeDriver browser = null;
        try (ServingTool serve = ServingTool.start(jobDir, new Configuration())) {
            browser = new ChromeDriver(service, options);
            browser.manage().window().setSize(new Dimension(1400, 1500));
            // An upper bound for a slow machine, not part of any verdict: each wait ends when
            // its condition holds.
            WebDriverWait wait = new WebDriverWait(browser, Duration.ofMinutes(3));
            browser.get(serve.url());

            checkOperatorsAndStates(browser, wait, nameB);
            checkInspectionKept(serve, b, nameB);
            checkLookup(browser, wait);
            checkScan(browser, wait, b);
            checkDiff(browser, wait, a, b, nameA, nameB);

            // The page's top (checkpoints, operators, lookup, scan: the README's picture), then
            // the whole page in one picture: the window as tall as the page.
            Path shots = Files.createDirectories(Paths.get("target", "web-monitor"));
            browser.manage().window().setSize(new Dimension(1400, 1860));
            browser.executeScript("window.scrollTo(0, 0);");
            Files.write(
                    shots.resolve("monitor-top.png"), browser.getScreenshotAs(OutputType.BYTES));
            int height =
                    ((Number)
                                    browser.executeScript(
                                            "return document.documentElement.scrollHeight;"))
                            .intValue();
            browser.manage().window().setSize(new Dimension(1400, height));
            browser.executeScript("window.scrollTo(0, 0);");
            Files.write(shots.resolve("monitor.png"), browser.getScreenshotAs(OutputType.BYTES));

            checkDamage(browser, wait, a, nameA, shots);
            assertThat(serve.stop()).as(serve.err()).isZero();
        } finally {
            if (browser != null) {
                browser.quit();
            }
        }

        // The JobManager may still be discarding checkpoints subsumed before the job ended: a
        // file may go, but none may appear or change, and the two browsed ones stay whole.
        Map<String, String> after = CheckpointFiles.hashedContents(jobDir);
        assertThat(after.keySet()).as("files created").isSubsetOf(before.keySet());
        after.forEach((file, hash) -> assertThat(hash).as(file).isEqualTo(before.get(file)));
        Set<String> browsed = new TreeSet<>(ReferencedFiles.of(flinkPath(a)));
        browsed.addAll(ReferencedFiles.of(flinkPath(b)));
        assertThat(after.keySet()).containsAll(browsed);
    }

    /**
     * The page inspected {@code checkpoint} (over 100 SSTs) already: 20 more loads of the page and
     * of its inspection read none of its files again (moved away meanwhile, they would show as
     * damaged) and answer the same.
     */
    private static void checkInspectionKept(ServingTool serve, String checkpoint, String name)
            throws Exception {
        URI inspect = URI.create(serve.url() + "api/inspect?checkpoint=" + name);
        HttpClient http = HttpClient.newHttpClient();
        String first = http.send(HttpRequest.newBuilder(inspect).build(), BodyHandlers.ofString())
                .body();
        assertThat(JSON.readTree(first).get("operators")).isNotEmpty();
        Set<Path> files = CheckpointFiles.referencedSstFiles(Paths.get(URI.create(checkpoint)));
        assertThat(files).hasSizeGreaterThanOrEqualTo(100);
        Map<Path, Path> aside = new HashMap<>();
        try {
            for (Path file : files) {
                aside.put(file, Files.move(file, file.resolveSibling(file.getFileName() + ".x")));
            }
            for (int load = 0; load < 20; load++) {
                HttpResponse<String> page =
                        http.send(
                                HttpRequest.newBuilder(URI.create(serve.url())).build(),
                                BodyHandlers.ofString());
                assertThat(page.statusCode()).isEqualTo(200);
                assertThat(page.body()).contains("<html");
                HttpResponse<String> again =
                        http.send(HttpRequest.newBuilder(inspect).build(), BodyHandlers.ofString());
                assertThat(again.statusCode()).isEqualTo(200);
                assertThat(again.body()).as("load %d", load).isEqualTo(first);
            }
        } finally {
            for (Map.Entry<Path, Path> moved : aside.entrySet()) {
                Files.move(moved.getValue(), moved.getKey());
            }
        }
    }

    /**
     * One flipped byte in an SST of {@code checkpoint}: the page still shows every operator and
     * the sound states with their entries, and marks the damaged state and subtask, naming the
     * file ({@code monitor-damaged.png}); the file is put back as it was, time included.
     */
    private static void checkDamage(
            ChromeDriver browser, WebDriverWait wait, String checkpoint, String name, Path shots)
            throws Exception {
        Path file = Paths.get(URI.create(ForStToolITCase.largestSst(checkpoint)));
        byte[] original = Files.readAllBytes(file);
        FileTime modified = Files.getLastModifiedTime(file);
        byte[] flipped = original.clone();
        flipped[10] ^= 0x40;
        Files.write(file, flipped);
        try {
            browser.findElement(By.cssSelector("button.checkpoint[data-name='" + name + "']"))
                    .click();
            wait.until(
                    ExpectedConditions.presenceOfElementLocated(
                            By.cssSelector("#operators[data-checkpoint='" + name + "']")));
            List<WebElement> damagedStates = browser.findElements(By.cssSelector("tr.damaged"));
            assertThat(damagedStates).filteredOn(r -> r.getAttribute("class").contains("state"))
                    .hasSize(1)
                    .allMatch(r -> r.getText().contains("damaged"))
                    .allMatch(r -> r.getAttribute("title").contains(file.getFileName().toString()));
            assertThat(damagedStates).filteredOn(r -> r.getAttribute("class").contains("subtask"))
                    .hasSize(1);
            assertThat(browser.findElements(By.cssSelector("section.operator")))
                    .extracting(section -> section.getAttribute("data-label"))
                    .contains(ToolStateJob.V1_UID, ToolStateJob.V2_UID);
            assertThat(browser.findElements(By.cssSelector("tr.state:not(.damaged) td.entries")))
                    .isNotEmpty()
                    .allMatch(cell -> cell.getText().matches("\\d+"));
            Files.write(
                    shots.resolve("monitor-damaged.png"), browser.getScreenshotAs(OutputType.BYTES));
        } finally {
            Files.write(file, original);
            Files.setLastModifiedTime(file, modified);
        }
    }

    private static void checkOperatorsAndStates(
            ChromeDriver browser, WebDriverWait wait, String checkpoint) {
        wait.until(
                ExpectedConditions.elementToBeClickable(
                        By.cssSelector("button.checkpoint[data-name='" + checkpoint + "']")));
        browser.findElement(By.cssSelector("button.checkpoint[data-name='" + checkpoint + "']"))
                .click();
        wait.until(
                ExpectedConditions.presenceOfElementLocated(
                        By.cssSelector("#operators[data-checkpoint='" + checkpoint + "']")));
        Map<String, Map<String, String>> shown = new TreeMap<>();
        for (WebElement operator : browser.findElements(By.cssSelector("section.operator"))) {
            Map<String, String> states = new TreeMap<>();
            for (WebElement row : operator.findElements(By.cssSelector("tr.state"))) {
                states.put(
                        row.getAttribute("data-state"),
                        row.findElement(By.cssSelector("td.kind")).getText()
                                + " "
                                + row.findElement(By.cssSelector("td.entries")).getText());
            }
            shown.put(operator.getAttribute("data-label"), states);
        }
        assertThat(shown).containsKeys(ToolStateJob.V1_UID, ToolStateJob.V2_UID);
        Map<String, List<String>> expected = ToolStateJob.expected(RECORDS);
        assertThat(shown.get(ToolStateJob.V2_UID))
                .containsEntry("count", "value " + expected.get("count").size())
                .containsEntry("seen", "list " + expected.get("seen").size())
                .containsEntry("by-mod", "map " + expected.get("by-mod").size());
        assertThat(shown.get(ToolStateJob.V1_UID))
                .containsEntry("last", "value " + expected.get("last").size())
                .containsEntry("v1-seen", "list " + expected.get("v1-seen").size())
                .containsEntry("v1-map", "map " + expected.get("v1-map").size())
                .containsKey("ttl-last");
    }

    private static void checkLookup(ChromeDriver browser, WebDriverWait wait) {
        new Select(browser.findElement(By.id("lookup-operator")))
                .selectByValue(ToolStateJob.V2_UID);
        new Select(browser.findElement(By.id("lookup-state"))).selectByValue("count");
        String key = ToolStateJob.key(7);
        browser.findElement(By.id("lookup-key")).sendKeys(key);
        browser.findElement(By.id("lookup-go")).click();
        wait.until(
                ExpectedConditions.presenceOfElementLocated(
                        By.cssSelector("#lookup-result[data-done='" + key + "']")));
        List<WebElement> rows = browser.findElements(By.cssSelector("#lookup-result tr.entry"));
        assertThat(rows).hasSize(1);
        String line =
                ToolStateJob.expected(RECORDS).get("count").stream()
                        .filter(l -> l.startsWith("\"" + key + "\"|"))
                        .findFirst()
                        .orElseThrow();
        assertThat(cell(rows.get(0), "key") + "|-|" + cell(rows.get(0), "value")).isEqualTo(line);
    }

    /** The first two pages of a scan of {@code count} equal what {@code dump} prints first. */
    private static void checkScan(ChromeDriver browser, WebDriverWait wait, String checkpoint)
            throws Exception {
        List<String> dumped = new ArrayList<>();
        for (String line :
                tool("dump", checkpoint, "--operator", ToolStateJob.V2_UID, "--state", "count",
                                "--json")
                        .split("\n")) {
            JsonNode entry = JSON.readTree(line);
            dumped.add(
                    entry.get("subtask").asText()
                            + " "
                            + JSON.writeValueAsString(entry.get("key"))
                            + " "
                            + JSON.writeValueAsString(entry.get("value")));
        }
        assertThat(dumped).hasSizeGreaterThan(2 * PAGE);
        new Select(browser.findElement(By.id("scan-operator"))).selectByValue(ToolStateJob.V2_UID);
        new Select(browser.findElement(By.id("scan-state"))).selectByValue("count");
        WebElement limit = browser.findElement(By.id("scan-limit"));
        limit.clear();
        limit.sendKeys(Integer.toString(PAGE));
        browser.findElement(By.id("scan-go")).click();
        wait.until(
                ExpectedConditions.presenceOfElementLocated(
                        By.cssSelector("#scan-result[data-page='1']")));
        assertThat(scanRows(browser)).isEqualTo(dumped.subList(0, PAGE));
        wait.until(ExpectedConditions.elementToBeClickable(By.id("scan-next")));
        browser.findElement(By.id("scan-next")).click();
        wait.until(
                ExpectedConditions.presenceOfElementLocated(
                        By.cssSelector("#scan-result[data-page='2']")));
        assertThat(scanRows(browser)).isEqualTo(dumped.subList(PAGE, 2 * PAGE));
    }

    private static List<String> scanRows(ChromeDriver browser) {
        List<String> rows = new ArrayList<>();
        for (WebElement row : browser.findElements(By.cssSelector("#scan-result tr.entry"))) {
            rows.add(
                    row.findElement(By.cssSelector("td")).getText()
                            + " "
                            + cell(row, "key")
                            + " "
                            + cell(row, "value"));
        }
        return rows;
    }

    private static void checkDiff(
            ChromeDriver browser,
            WebDriverWait wait,
            String a,
            String b,
            String nameA,
            String nameB)
            throws Exception {
        new Select(browser.findElement(By.id("diff-a"))).selectByValue(nameA);
        new Select(browser.findElement(By.id("diff-b"))).selectByValue(nameB);
        browser.findElement(By.id("diff-go")).click();
        wait.until(
                ExpectedConditions.presenceOfElementLocated(
                        By.cssSelector("#diff-result[data-done='" + nameA + ".." + nameB + "']")));
        Set<String> before = ReferencedFiles.of(flinkPath(a));
        Set<String> after = ReferencedFiles.of(flinkPath(b));
        Set<String> added = new TreeSet<>(after);
        added.removeAll(before);
        Set<String> removed = new TreeSet<>(before);
        removed.removeAll(after);
        assertThat(added).isNotEmpty();
        assertThat(diffFiles(browser, "added")).isEqualTo(added);
        assertThat(diffFiles(browser, "removed")).isEqualTo(removed);
    }

    private static Set<String> diffFiles(ChromeDriver browser, String change) {
        Set<String> files = new TreeSet<>();
        for (WebElement row :
                browser.findElements(
                        By.cssSelector("#diff-result tr.file[data-change='" + change + "']"))) {
            files.add(row.getAttribute("data-file")); // the list is folded: no visible text
        }
        return files;
    }

    private static org.apache.flink.core.fs.Path flinkPath(String uri) {
        return new org.apache.flink.core.fs.Path(uri);
    }

    private static String cell(WebElement row, String cls) {
        return row.findElement(By.cssSelector("td." + cls)).getText();
    }

    private static String tool(String... args) throws Exception {
        ForStToolITCase.Result result = ForStToolITCase.tool(new Configuration(), args);
        assertThat(result.status()).as(result.err()).isZero();
        return result.out();
    }
}
