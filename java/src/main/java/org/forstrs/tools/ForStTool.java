package org.forstrs.tools;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.plugin.DefaultPluginManager;
import org.apache.flink.core.plugin.DirectoryBasedPluginFinder;
import org.apache.flink.core.plugin.PluginUtils;
import org.apache.flink.util.TimeUtils;

import org.forstrs.flink.state.DbLease;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The command line of ForSt-RS's tools, run with Flink's jars on the class path and its
 * configuration for file systems: {@code java -jar $FLINK_HOME/lib/forstjni-<version>.jar
 * <command>} ({@link ToolLauncher} adds Flink's jars) or {@code java -cp "$FLINK_HOME/lib/*"
 * org.forstrs.tools.ForStTool <command>}. File systems are configured from {@code
 * FLINK_CONF_DIR} (else {@code $FLINK_HOME/conf}, else {@code conf}) and plugins found in {@code
 * FLINK_PLUGINS_DIR} (else {@code $FLINK_HOME/plugins}, else {@code plugins}), as Flink's own
 * processes do: run from Flink's directory or its jar in {@code lib/}, it needs no settings.
 */
public final class ForStTool {

    /** Several of {@link DbLease#RENEW_INTERVAL}: a renewal or two may be late or fail. */
    static final Duration DEFAULT_LEASE_TIMEOUT = Duration.ofMinutes(5);

    static final String USAGE =
            String.join(
                    "\n",
                    "usage: ForStTool <command> ...",
                    "   or: java -jar forstjni-<version>.jar [--classpath <jars>] <command> ...",
                    "  (with Flink's jars from $FLINK_HOME/lib, or from the jar's own directory",
                    "  when that is Flink's lib/; --classpath adds the classes the job's state",
                    "  serializers name, e.g. its POJOs, else their states show as undecoded)",
                    "  gc <checkpoint dir> [--delete] [--min-age <duration>]",
                    "     [--lease-timeout <duration>]",
                    "      Lists (with --delete: deletes) the files under the shared directories",
                    "      of the jobs in <checkpoint dir> (execution.checkpointing.dir) that no",
                    "      retained checkpoint of any job there references. A job is skipped",
                    "      while one of its databases is open: it renews a lease there every",
                    "      30 s (one renewed within --lease-timeout, default 5 min, counts), and",
                    "      a database directory that no lease names is named and skipped. Job",
                    "      directories written to within --min-age (default 1 h) are skipped",
                    "      too.",
                    "  referenced <checkpoint or savepoint dir>...",
                    "      The files the checkpoints or savepoints reference, one a line, as",
                    "      authority and path (the scheme left out: s3 and s3a name one file).",
                    "  inspect <checkpoint or savepoint dir>",
                    "      What it holds, one line per item, each '<kind> <name> key=value...'",
                    "      (strings with spaces JSON-quoted):",
                    "        checkpoint <dir> checkpoint-id= operators=",
                    "        operator <uid or id> id= name= parallelism= max-parallelism=",
                    "            forst-subtasks= other-keyed-handles=",
                    "        subtask <i> operator= key-groups=<first>-<last> checkpoint-id= files=",
                    "            bytes= shared-files= shared-bytes= oldest=<file>@<time>",
                    "            newest=<file>@<time>   (by modification time, ISO-8601 UTC)",
                    "        state <name> operator= subtask= kind=value|list|map|reducing|",
                    "            aggregating|timers|unknown type= ttl= entries= files= bytes= key=",
                    "            namespace= user-key= value=   (serializers; '-' where none)",
                    "        level <n> operator= subtask= files= bytes=",
                    "        file <name> operator= subtask= state= level= bytes= entries=",
                    "            shared=no|chk-<n>|elsewhere location=",
                    "      shared: chk-<n> is the first earlier retained checkpoint of the job",
                    "      that references the file too; elsewhere: the file lies outside the",
                    "      job's directory (an earlier job's checkpoint it was restored from).",
                    "      A damaged checkpoint is read as far as it can be: each database or",
                    "      state that could not be read gets entries=- and a last line",
                    "        damaged operator= subtask= [state=] reason=   (naming the file)",
                    "      Exit status 0, or 1 when anything was damaged.",
                    "  verify <checkpoint or savepoint dir>",
                    "      Reads every referenced file, checks every SST block's checksum and",
                    "      each database's manifest against its files. Lines: 'database",
                    "      operator= subtask= ok|bad', 'bad <file>: <why>', then",
                    "      'result=pass|fail databases= problems='. Exit status 0 pass, 1 fail.",
                    "  diff <a> <b>",
                    "      Files and bytes b references and a does not (added), the reverse",
                    "      (removed) and both (shared). Lines: 'operator <uid or id>",
                    "      added-files= added-bytes= removed-files= removed-bytes= shared-files=",
                    "      shared-bytes=', the same per ForSt-RS state as 'state <name>",
                    "      operator= added-files= ...' (SSTs only), 'added|removed <file> bytes=",
                    "      operator=', then 'total ...' as the operator lines.",
                    "  dump <dir> --operator <uid|id|name> --state <name> [--key <text>]",
                    "      [--key-prefix <text>] [--json]",
                    "      The state's entries decoded with the checkpoint's serializers, by",
                    "      subtask in key order; --key/--key-prefix match the key's text (a",
                    "      string key as itself, a one-field SQL row as its field, others as",
                    "      JSON). SQL rows are arrays of their fields; a timer queue's entries",
                    "      are key, namespace and value {\"timestamp\":<ms>}. Text: tab-separated",
                    "      subtask= key-group= key= namespace= user-key= value= (JSON values;",
                    "      user-key '-' unless a map). --json: one object per line with",
                    "      subtask, keyGroup, key, namespace, userKey (maps), value. Bytes no",
                    "      serializer decodes are shown as {\"raw\":\"<hex>\"}. A subtask whose",
                    "      files cannot be read (damaged, missing) is named on stderr after the",
                    "      entries read, 'damaged operator= subtask= state= reason=', exit 1.",
                    "  serve <job, checkpoint or savepoint dir> [--port <n>] [--bind <address>]",
                    "      A read-only web monitor of the checkpoints in the directory (itself,",
                    "      its chk-<n> and savepoint directories, and those of its job",
                    "      directories): operators, states, files, key lookup, paged scans and",
                    "      diffs, as a page and as JSON under /api/. Binds 127.0.0.1 and port",
                    "      8423 unless told (--port 0: a free port; none of Flink's defaults);",
                    "      prints 'serving <url>' first, then serves until stopped. Never",
                    "      writes. A sound checkpoint's inspection is read once and kept.",
                    "Exit status: 0 done, 1 failed, 2 wrong usage.");

    private ForStTool() {}

    public static void main(String[] args) {
        int status;
        try {
            Configuration config = initializeFileSystems();
            status = run(args, System.out, System.err, config);
        } catch (Exception e) {
            System.err.println("ForStTool failed: " + e);
            status = 1;
        }
        System.exit(status);
    }

    /** Runs a command; its exit status: 0 done, 1 failed, 2 wrong usage. */
    public static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        return run(args, out, err, new Configuration());
    }

    /**
     * Runs a command with Flink's configuration {@code config} (its {@code s3.*} keys reach the
     * native reader of {@code inspect}, {@code verify} and {@code dump}); its exit status: 0
     * done, 1 failed, 2 wrong usage.
     */
    public static int run(String[] args, PrintStream out, PrintStream err, Configuration config)
            throws Exception {
        if (args.length == 0) {
            err.println(USAGE);
            return 2;
        }
        switch (args[0]) {
            case "gc":
                return gc(args, out, err);
            case "referenced":
                return referenced(args, out, err);
            case "inspect":
                return Inspect.run(args, out, err, config);
            case "verify":
                return Verify.run(args, out, err, config);
            case "diff":
                return Diff.run(args, out, err, config);
            case "dump":
                return Dump.run(args, out, err, config);
            case "serve":
                return serve(args, out, err, config);
            default:
                err.println("unknown command: " + args[0] + "\n" + USAGE);
                return 2;
        }
    }

    private static int gc(String[] args, PrintStream out, PrintStream err) throws Exception {
        String root = null;
        boolean delete = false;
        Duration minAge = Duration.ofHours(1);
        Duration leaseTimeout = DEFAULT_LEASE_TIMEOUT;
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--delete")) {
                delete = true;
            } else if (args[i].equals("--min-age") && i + 1 < args.length) {
                minAge = TimeUtils.parseDuration(args[++i]);
            } else if (args[i].equals("--lease-timeout") && i + 1 < args.length) {
                leaseTimeout = TimeUtils.parseDuration(args[++i]);
            } else if (root == null && !args[i].startsWith("--")) {
                root = args[i];
            } else {
                err.println("gc: unexpected argument " + args[i] + "\n" + USAGE);
                return 2;
            }
        }
        if (root == null) {
            err.println("gc: the checkpoint directory is missing\n" + USAGE);
            return 2;
        }
        List<UnreferencedFiles.Job> jobs =
                UnreferencedFiles.scan(
                        new Path(root), minAge, leaseTimeout, System.currentTimeMillis());
        if (jobs.isEmpty()) {
            out.println("no job directories under " + root);
        }
        for (UnreferencedFiles.Job job : jobs) {
            if (job.skipped != null) {
                out.printf("job %s: skipped, %s%n", job.dir.getName(), job.skipped);
                continue;
            }
            List<String> ids = new ArrayList<>();
            job.checkpoints.forEach(c -> ids.add(c.getName()));
            out.printf(
                    "job %s: retained %s; %d files under shared, %d referenced by nothing"
                            + " (%d bytes)%n",
                    job.dir.getName(),
                    ids.isEmpty() ? "no checkpoint" : String.join(", ", ids),
                    job.sharedFiles,
                    job.unreferenced.size(),
                    job.unreferencedBytes());
            for (FileStatus file : job.unreferenced) {
                out.printf("  %s %d%n", file.getPath(), file.getLen());
            }
            if (delete) {
                out.printf("  deleted %d files%n", UnreferencedFiles.delete(job));
            }
        }
        if (!delete && jobs.stream().anyMatch(j -> !j.unreferenced.isEmpty())) {
            out.println("nothing deleted: run again with --delete to delete the files listed");
        }
        return 0;
    }

    /** Serves until the thread is interrupted (in-process callers stop it so). */
    private static int serve(String[] args, PrintStream out, PrintStream err, Configuration config)
            throws Exception {
        String root = null;
        String bind = "127.0.0.1";
        int port = WebMonitor.DEFAULT_PORT;
        for (int i = 1; i < args.length; i++) {
            boolean hasValue = i + 1 < args.length;
            if (args[i].equals("--port") && hasValue) {
                try {
                    port = Integer.parseInt(args[++i]);
                } catch (NumberFormatException e) {
                    port = -1;
                }
                if (port < 0 || port > 65535) {
                    err.println("serve: --port must be 0..65535\n" + USAGE);
                    return 2;
                }
            } else if (args[i].equals("--bind") && hasValue) {
                bind = args[++i];
            } else if (root == null && !args[i].startsWith("--")) {
                root = args[i];
            } else {
                err.println("serve: unexpected argument " + args[i] + "\n" + USAGE);
                return 2;
            }
        }
        if (root == null) {
            err.println("serve: the directory is missing\n" + USAGE);
            return 2;
        }
        Path dir = new Path(root);
        if (!dir.getFileSystem().exists(dir)) {
            err.println("serve: no directory " + root);
            return 1;
        }
        try (WebMonitor monitor = WebMonitor.start(dir, bind, port, config)) {
            out.println("serving " + monitor.url());
            out.flush();
            new java.util.concurrent.CountDownLatch(1).await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    private static int referenced(String[] args, PrintStream out, PrintStream err)
            throws Exception {
        if (args.length < 2) {
            err.println("referenced: the checkpoint or savepoint directory is missing\n" + USAGE);
            return 2;
        }
        Set<String> files = new TreeSet<>();
        for (int i = 1; i < args.length; i++) {
            files.addAll(ReferencedFiles.of(new Path(args[i])));
        }
        files.forEach(out::println);
        return 0;
    }

    private static Configuration initializeFileSystems() throws IOException {
        String home = System.getenv("FLINK_HOME");
        if (home == null) {
            home = System.getProperty(ToolLauncher.FLINK_HOME_PROPERTY);
        }
        String confDir = System.getenv("FLINK_CONF_DIR");
        if (confDir == null) {
            confDir = home != null ? home + "/conf" : "conf";
        }
        Configuration config =
                confDir != null && new File(confDir).isDirectory()
                        ? GlobalConfiguration.loadConfiguration(confDir)
                        : new Configuration();
        File plugins = home == null ? null : new File(home, "plugins");
        boolean homePlugins = System.getenv("FLINK_PLUGINS_DIR") == null && plugins != null;
        FileSystem.initialize(
                config,
                homePlugins && plugins.isDirectory()
                        ? new DefaultPluginManager(
                                new DirectoryBasedPluginFinder(plugins.toPath()).findPlugins(),
                                CoreOptions.getPluginParentFirstLoaderPatterns(config))
                        : PluginUtils.createPluginManagerFromRootFolder(config));
        return config;
    }
}
