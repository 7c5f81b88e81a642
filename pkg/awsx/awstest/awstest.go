// Package awstest connects tests to the local AWS emulators.
//
// It connects tests to the real-protocol AWS emulators the
// project runs locally (DynamoDB Local, fauxqs for SQS and S3, moto for
// Secrets Manager and KMS), starting them with scripts/emulators.sh when
// they are not already running. Tests that need an emulator fail, never
// skip, when it cannot be started.
package awstest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Endpoints are the emulators' base URLs.
type Endpoints struct {
	DynamoDB string
	SQS      string
	S3       string
}

var (
	once      sync.Once
	endpoints Endpoints
	startErr  error
)

// Start returns the emulators' endpoints, starting them on first use. The
// variables GAUNTLET_TEST_DYNAMODB_ENDPOINT, …_SQS_…, …_S3_… override it.
func Start(t testing.TB) Endpoints {
	t.Helper()
	once.Do(func() { endpoints, startErr = start() })
	if startErr != nil {
		t.Fatalf("AWS emulators: %v (run scripts/emulators.sh up to see why)", startErr)
	}
	return endpoints
}

var (
	motoOnce     sync.Once
	motoEndpoint string
	motoErr      error
)

// Moto returns moto_server's endpoint, starting it (alone) on first use;
// GAUNTLET_TEST_MOTO_ENDPOINT overrides it. Its state is shared by every
// test process: name what a test creates with Name.
func Moto(t testing.TB) string {
	t.Helper()
	motoOnce.Do(func() {
		if motoEndpoint = os.Getenv("GAUNTLET_TEST_MOTO_ENDPOINT"); motoEndpoint != "" {
			return
		}
		var vars map[string]string
		if vars, motoErr = emulatorsUp("moto"); motoErr == nil {
			if motoEndpoint = vars["GAUNTLET_TEST_MOTO_ENDPOINT"]; motoEndpoint == "" {
				motoErr = fmt.Errorf("scripts/emulators.sh up moto printed no endpoint")
			}
		}
	})
	if motoErr != nil {
		t.Fatalf("moto: %v (run scripts/emulators.sh up moto to see why)", motoErr)
	}
	return motoEndpoint
}

// Credentials are the static credentials every emulator client signs with.
func Credentials() aws.CredentialsProvider { return creds }

// emulatorsUp runs scripts/emulators.sh up with args and returns the
// variables it prints.
func emulatorsUp(args ...string) (map[string]string, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "scripts", "emulators.sh"), "up"}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/emulators.sh up %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			vars[name] = value
		}
	}
	return vars, nil
}

func start() (Endpoints, error) {
	e := Endpoints{
		DynamoDB: os.Getenv("GAUNTLET_TEST_DYNAMODB_ENDPOINT"),
		SQS:      os.Getenv("GAUNTLET_TEST_SQS_ENDPOINT"),
		S3:       os.Getenv("GAUNTLET_TEST_S3_ENDPOINT"),
	}
	if e.DynamoDB != "" && e.SQS != "" && e.S3 != "" {
		return e, nil
	}
	vars, err := emulatorsUp()
	if err != nil {
		return e, err
	}
	fill := func(dst *string, name string) {
		if *dst == "" {
			*dst = vars[name]
		}
	}
	fill(&e.DynamoDB, "GAUNTLET_TEST_DYNAMODB_ENDPOINT")
	fill(&e.SQS, "GAUNTLET_TEST_SQS_ENDPOINT")
	fill(&e.S3, "GAUNTLET_TEST_S3_ENDPOINT")
	if e.DynamoDB == "" || e.SQS == "" || e.S3 == "" {
		return e, fmt.Errorf("scripts/emulators.sh up printed no endpoints: %v", vars)
	}
	return e, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Region is the region every emulator client uses.
const Region = "us-east-1"

var creds = credentials.NewStaticCredentialsProvider("test", "test", "")

// DynamoDBClient returns a client of DynamoDB Local.
func (e Endpoints) DynamoDBClient() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{Region: Region, Credentials: creds, BaseEndpoint: aws.String(e.DynamoDB)})
}

// StreamsClient returns a DynamoDB Streams client of DynamoDB Local.
func (e Endpoints) StreamsClient() *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{Region: Region, Credentials: creds, BaseEndpoint: aws.String(e.DynamoDB)})
}

// SQSClient returns a client of fauxqs's SQS.
func (e Endpoints) SQSClient() *sqs.Client {
	return sqs.New(sqs.Options{Region: Region, Credentials: creds, BaseEndpoint: aws.String(e.SQS)})
}

// S3Client returns a path-style client of fauxqs's S3. It sends checksums
// only where S3 requires them: fauxqs stores an UploadPart body sent with
// aws-chunked trailing checksums verbatim, so its ETag would not match.
func (e Endpoints) S3Client() *s3.Client {
	return s3.New(s3.Options{
		Region: Region, Credentials: creds, BaseEndpoint: aws.String(e.S3), UsePathStyle: true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
}

// Name returns a resource name unique to this test process, safe for
// tables, queues and buckets (lower case, digits, dashes).
func Name(base string) string {
	return fmt.Sprintf("%s-%d-%d", base, os.Getpid(), time.Now().UnixNano()%1_000_000_000)
}
